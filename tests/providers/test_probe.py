"""``laneway probe``: a live call per wire format against the sim, read from stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.cli._wire import redact, safe_url
from laneway.cli.main import main
from laneway.cli.probe import PROBE_TEXT
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.providers.support import WIRES, Wire, source

EMBED_WIRES = [w for w in WIRES if w.embeds]


def run(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    src: dict[str, Any],
    lane_name: str = "lane",
    **lane: Any,
) -> tuple[int, list[str]]:
    path = tmp_path / "laneway.yaml"
    config = {"lanes": {"lane": {"sources": [src], **lane}}, "telemetry": {"url": "none"}}
    path.write_text(yaml.safe_dump(config))
    status = main(["probe", lane_name, "--config", str(path)])
    return status, capsys.readouterr().out.splitlines()


def line(lines: list[str], prefix: str) -> str:
    return next(text for text in lines if text.startswith(prefix))


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
def test_chat_lane_report(sim: RunningSim, wire: Wire, capsys, tmp_path) -> None:
    src = {**source(sim, wire, unique_spec("ok")), "price": {"input": 1.0, "output": 2.0}}
    src["api_key"] = "sk-literal-secret"
    status, lines = run(capsys, tmp_path, src)
    out = "\n".join(lines)
    assert status == 0, out
    assert line(lines, "endpoint: POST http://127.0.0.1").endswith("-> HTTP 200")
    assert f"<{len(PROBE_TEXT)} chars>" in line(lines, "request body:")
    assert PROBE_TEXT not in line(lines, "request body:")
    assert "sk-literal-secret" not in out
    assert line(lines, "upstream returned usage:") == "upstream returned usage: YES"
    assert line(lines, "laneway recorded usage:").endswith("(provider)")
    assert line(lines, "cost: $").endswith("(priced; price from price override)")


@pytest.mark.parametrize("wire", EMBED_WIRES, ids=lambda w: w.name)
def test_embed_lane_match(sim: RunningSim, wire: Wire, capsys, tmp_path) -> None:
    src = source(sim, wire, unique_spec("ok"))
    status, lines = run(capsys, tmp_path, src, kind="embed", dimensions=16)
    at = lines.index("OBSERVED len(embedding) = 16")
    assert lines[at + 1] == "DIMENSION VERDICT: MATCH"
    assert status == 0


@pytest.mark.parametrize("wire", EMBED_WIRES, ids=lambda w: w.name)
def test_embed_lane_mismatch_exits_non_zero(sim: RunningSim, wire: Wire, capsys, tmp_path) -> None:
    src = source(sim, wire, unique_spec("dims=12"))
    status, lines = run(capsys, tmp_path, src, kind="embed", dimensions=16)
    at = lines.index("OBSERVED len(embedding) = 12")
    assert lines[at + 1] == "DIMENSION VERDICT: MISMATCH"
    assert status == 1


def test_embed_lane_without_pin_or_usage(sim: RunningSim, capsys, tmp_path) -> None:
    src = source(sim, WIRES[1], unique_spec("nousage"))
    status, lines = run(capsys, tmp_path, src, kind="embed")
    assert status == 0
    assert lines[-1] == "DIMENSION VERDICT: NOT PINNED"
    assert line(lines, "upstream returned usage:").startswith("upstream returned usage: NO")
    assert line(lines, "cost:") == (
        "cost: unknown (usage_unknown; price: no price for this source (set price: on it))"
    )


def test_failed_call_exits_non_zero(sim: RunningSim, capsys, tmp_path) -> None:
    src = source(sim, WIRES[2], unique_spec("status=503"))
    status, lines = run(capsys, tmp_path, src)
    assert status == 1
    assert line(lines, "endpoint:").endswith("-> HTTP 503")
    assert line(lines, "cost:") == "cost: not computed (the call failed)"
    assert line(lines, "error:").startswith("error: lane lane:")


def test_unknown_lane(sim: RunningSim, capsys, tmp_path) -> None:
    status, lines = run(capsys, tmp_path, source(sim, WIRES[0], "ok"), lane_name="nope")
    assert status == 1
    assert lines == ["error: unknown lane 'nope'; lanes: lane"]


def test_urls_and_bodies_lose_secrets_and_text() -> None:
    url = safe_url("https://user:pw@example.com/v1/models/m:x?alt=sse&key=abc")
    assert url == "https://example.com/v1/models/m:x?alt=sse&key=<hidden>"
    body = {"model": "m", "input": ["secret"], "vector": [0.1, 0.2], "dimensions": 8}
    assert redact(body) == {
        "model": "m",
        "input": ["<6 chars>"],
        "vector": "<2 numbers>",
        "dimensions": 8,
    }


def two_sources(sim: RunningSim) -> dict[str, Any]:
    dead = {**source(sim, WIRES[0], unique_spec("status=503")), "name": "primary"}
    live = {**source(sim, WIRES[0], unique_spec("ok")), "name": "backup"}
    return {"sources": [dead, live], "retries": 2, "retry_on": [503], "backoff": {"base": 0}}


def run_lane(capsys, tmp_path: Path, lane: dict[str, Any], *args: str) -> tuple[int, str]:
    path = tmp_path / "laneway.yaml"
    path.write_text(yaml.safe_dump({"lanes": {"lane": lane}, "telemetry": {"url": "none"}}))
    status = main(["probe", "lane", "--config", str(path), *args])
    return status, capsys.readouterr().out


def test_a_dead_primary_probed_alone_fails(sim: RunningSim, capsys, tmp_path) -> None:
    """The issue's case: the lane probes 0 through its backup; the primary alone does not."""
    lane = two_sources(sim)
    assert run_lane(capsys, tmp_path, lane)[0] == 0
    status, out = run_lane(capsys, tmp_path, lane, "--source", "primary")
    assert status == 1 and "source primary alone" in out and "HTTP 503" in out
    assert run_lane(capsys, tmp_path, lane, "--source", "backup")[0] == 0


def test_each_source_reports_every_one_and_fails_if_any_does(
    sim: RunningSim, capsys, tmp_path
) -> None:
    status, out = run_lane(capsys, tmp_path, two_sources(sim), "--each-source")
    assert status == 1 and out.count("probe: lane lane (chat, source ") == 2
    assert out.rstrip().endswith("sources of lane lane: 2 probed, FAILED: primary")


def test_an_unknown_source_names_the_lane_s_sources(sim: RunningSim, capsys, tmp_path) -> None:
    status, out = run_lane(capsys, tmp_path, two_sources(sim), "--source", "nope")
    assert status == 1 and "sources: primary, backup" in out
