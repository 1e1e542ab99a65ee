"""The corpus: LiteLLM proxy configs written by others, each imported, checked and served.

For every folder of ``tests/data/litellm``: the import renders exactly the
reviewed ``laneway.yaml`` beside it (or, where no deployment is one laneway can
call, no lane at all and every gap listed); ``laneway check`` passes on it;
and, with every deployment's base URL pointed at the simulator in the wire
format it speaks, one call per lane and per alias answers 200 through the
gateway's ASGI app in-process (chat lanes a chat call, embed lanes an
embeddings call). Telemetry, shared state and the cache stay in memory here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from laneway.app.composer import build_gateway
from laneway.cli.importer import render_translation
from laneway.cli.main import main
from laneway.config import parse_config
from laneway.config.models import Secret
from laneway.migrate.litellm import Translation, translate
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.asgi_driver import call

CORPUS = Path(__file__).parents[1] / "data" / "litellm"
NAMES = sorted(p.name for p in CORPUS.iterdir() if (p / "config.yaml").exists())
ROOTS = {"openai": "v1", "azure": "", "gemini": "v1beta", "anthropic": "v1"}
"""The simulator's API root per wire format."""
REF = re.compile(r"os\.environ/\w+")
HELLO = [{"role": "user", "content": "Say hello."}]


def imported(name: str) -> Translation:
    return translate(yaml.safe_load((CORPUS / name / "config.yaml").read_text()))


def test_the_corpus_holds_at_least_25_configs_each_with_its_source() -> None:
    assert len(NAMES) >= 25
    for name in NAMES:
        source = (CORPUS / name / "SOURCE").read_text()
        assert "repo:" in source and "licence:" in source, name


@pytest.mark.parametrize("name", NAMES)
def test_each_config_imports_to_its_reviewed_laneway_yaml(name: str) -> None:
    out = imported(name)
    expected = CORPUS / name / "laneway.yaml"
    if not expected.exists():
        assert out.config["lanes"] == {} and out.gaps, "no lane: every reason listed"
        return
    text = render_translation(out, "config.yaml")
    assert text == expected.read_text()
    assert _refs_kept(name, text)


def _refs_kept(name: str, text: str) -> bool:
    """Every ``os.environ/NAME`` the output holds is one the LiteLLM config wrote."""
    source = (CORPUS / name / "config.yaml").read_text()
    written = yaml.safe_dump(yaml.safe_load(text))
    return set(REF.findall(written)) <= set(REF.findall(source))


def _environ(text: str) -> dict[str, str]:
    return {ref[len("os.environ/") :]: f"sim-{ref[11:].lower()}" for ref in REF.findall(text)}


@pytest.mark.parametrize("name", [n for n in NAMES if (CORPUS / n / "laneway.yaml").exists()])
def test_each_import_checks_clean(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (CORPUS / name / "laneway.yaml").read_text()
    for variable, value in {**_environ(text), **imported(name).placeholders}.items():
        monkeypatch.setenv(variable, value)
    path = tmp_path / "laneway.yaml"
    path.write_text(text)
    assert main(["check", str(path)]) == 0, capsys.readouterr()


def served(text: str, sim: RunningSim) -> dict[str, Any]:
    """The imported config with each deployment at the simulator, state kept in memory."""
    data: dict[str, Any] = yaml.safe_load(text)
    spec = unique_spec("")
    for deployment in data["deployments"].values():
        root = ROOTS[deployment["provider"]]
        deployment["base_url"] = f"{sim.base_url}/b/{spec}/{root}".rstrip("/")
    data["telemetry"] = {"url": "none"}
    data.pop("state", None)
    data["cache"] = {"url": ":memory:"}
    return data


async def test_every_lane_and_alias_of_the_corpus_answers_through_the_gateway(
    sim: RunningSim, tmp_path: Path
) -> None:
    calls = 0
    for name in NAMES:
        expected = CORPUS / name / "laneway.yaml"
        if not expected.exists():
            continue
        text = expected.read_text()
        environ = {**os.environ, **_environ(text)}
        config = parse_config(yaml.safe_dump(served(text, sim)))
        gateway = build_gateway(config, environ, tmp_path)
        headers = [(b"content-type", b"application/json")]
        if config.server.keys:
            key = config.server.keys[0].key
            bearer = key.resolve(environ) if isinstance(key, Secret) else None
            headers.append((b"authorization", f"Bearer {bearer}".encode()))
        gateway.start()
        try:
            for model in [*config.lanes, *config.aliases]:
                lane = config.lanes[config.aliases.get(model, model)]
                path, body = _request(lane.kind, model)
                answer = await call(gateway, "POST", path, orjson.dumps(body), headers)
                assert answer.status == 200, (name, model, answer.body[:300])
                calls += 1
        finally:
            await gateway.flush()
            await gateway.close()
    assert calls >= 25


def _request(kind: str, model: str) -> tuple[str, dict[str, Any]]:
    if kind == "embed":
        return "/v1/embeddings", {"model": model, "input": ["hello"]}
    return "/v1/chat/completions", {"model": model, "messages": HELLO}
