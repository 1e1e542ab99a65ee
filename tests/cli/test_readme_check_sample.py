"""README's sample ``laneway check`` output is what a real run of the example config prints.

Before, it was stale (sources named ``openai:some/model`` where the example names a
deployment, no deployment, alias or readiness lines). When ``check``'s text
changes, regenerate the block: ``uv run laneway check examples/laneway.yaml``
with ``OPENROUTER_API_KEY`` unset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from laneway.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "$ uv run laneway check examples/laneway.yaml\n"


def test_the_readme_shows_a_real_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index(COMMAND) + len(COMMAND)
    shown = readme[start : readme.index("```", start)]
    assert main(["check", str(ROOT / "examples" / "laneway.yaml")]) == 0
    assert capsys.readouterr().out == shown
