"""The README's provider x feature table is what the requests through ``laneway serve`` show.

Each cell of the table is one test: the feature's request sent by the
official OpenAI and Anthropic SDKs to the provider's lane, its answer
checked (``tests.server.provider_matrix``), its outcome compared with the
README's cell. ``uv run python -m tests.server.provider_matrix`` rewrites
the table from the outcomes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from laneway.sim import RunningSim
from tests.providers.support import Wire
from tests.server.provider_matrix import (
    FEATURES,
    PROVIDERS,
    Clients,
    Feature,
    cell,
    matrix_clients,
    readme_cells,
)


@pytest.fixture(scope="module")
def clients(sim: RunningSim, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    with matrix_clients(sim, tmp_path_factory.mktemp("matrix")) as running:
        yield running


@pytest.mark.parametrize("wire", PROVIDERS, ids=lambda wire: wire.name)
@pytest.mark.parametrize("feature", FEATURES, ids=lambda feature: feature.name)
def test_cell_matches_the_readme(clients: Clients, feature: Feature, wire: Wire) -> None:
    readme = readme_cells()
    assert cell(feature, wire.name, clients) == readme[feature.name, wire.name]


def test_readme_table_has_every_feature_and_provider() -> None:
    expected = {(feature.name, wire.name) for feature in FEATURES for wire in PROVIDERS}
    assert set(readme_cells()) == expected
