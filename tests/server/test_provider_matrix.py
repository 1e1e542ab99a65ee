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
from anthropic import Anthropic
from openai import OpenAI

from laneway.app.composer import build_gateway
from laneway.config.models import LanewayConfig
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, GEMINI, OPENAI, Wire, source
from tests.server.provider_matrix import (
    FEATURES,
    OPENAI_TOOL,
    PROVIDERS,
    Clients,
    Feature,
    anthropic_tools,
    cell,
    matrix_clients,
    openai_tools,
    readme_cells,
)
from tests.server.support import serve_app


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


@pytest.mark.parametrize("fallback", [GEMINI, ANTHROPIC], ids=lambda wire: wire.name)
def test_a_tools_request_is_rescued_by_a_native_fallback(
    sim: RunningSim, tmp_path_factory: pytest.TempPathFactory, fallback: Wire
) -> None:
    """Both SDKs get their own tool-call shape from a fallback after the primary's 503.

    The first call tries the primary; later ones may go straight to the fallback
    (the primary's health is down), so only the first counts its attempts.
    """
    primary = source(sim, OPENAI, unique_spec("status=503"))
    rescue = source(sim, fallback, unique_spec("ok"))
    lanes = {"rescued": {"retries": 1, "retry_on": [503], "sources": [primary, rescue]}}
    settings = LanewayConfig.model_validate({"lanes": lanes, "telemetry": {"url": "none"}})
    folder = tmp_path_factory.mktemp("rescue")
    with (
        serve_app(build_gateway(settings, {}, folder)) as gw,
        OpenAI(base_url=gw.v1, api_key="unused", max_retries=0) as openai_sdk,
        Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as anthropic_sdk,
    ):
        raw = openai_sdk.chat.completions.with_raw_response.create(
            model="rescued", messages=[{"role": "user", "content": "hi"}], tools=[OPENAI_TOOL]
        )
        openai_tools(openai_sdk, "rescued")
        anthropic_tools(anthropic_sdk, "rescued")
    assert raw.headers["x-laneway-attempts"] == "2"
    assert raw.headers["x-laneway-source"].startswith(fallback.name)
