"""`laneway import litellm`: LiteLLM proxy configs translated field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.cli.main import main
from laneway.config import parse_config
from laneway.config.litellm import Translation, translate

HERE = Path(__file__).with_name("litellm")
EXAMPLE = Path(__file__).parents[2] / "examples" / "litellm"
ENV = [
    *(f"{name}_API_KEY" for name in ("OPENAI", "ANTHROPIC", "GEMINI", "OPENROUTER")),
    *(f"{name}_KEY" for name in ("AZURE_EASTUS", "AZURE_WESTUS", "LITELLM_MASTER")),
]
RETRIED = [408, 409, 429, 500, 502, 503, 504, "timeout", "connect"]


def imported(name: str) -> Translation:
    return translate(yaml.safe_load((HERE / name).read_text()))


def minimal(**params: Any) -> dict[str, Any]:
    return {"model_list": [{"model_name": "m", "litellm_params": {"model": "openai/x", **params}}]}


def test_nothing_declared_names_the_implicit_retries_and_default_timeout() -> None:
    out = translate(minimal())
    lane = out.config["lanes"]["m"]
    assert (lane["retries"], lane["retry_on"], lane["attempt_timeout"]) == (2, RETRIED, "6000s")
    assert lane["deadline"] == "18003s"  # 3 x 6000 s + (0.5 + 0.75) + (1 + 0.75), rounded up
    notes = " ".join(out.notes["m"])
    assert "openai.DEFAULT_MAX_RETRIES = 2" in notes
    assert "LiteLLM's default request_timeout" in notes
    assert "no overall deadline" in notes and "zeros" in notes and "$0" in notes
    assert "a single-deployment group is never cooled" in notes
    assert out.complete


def test_num_retries_zero_is_one_attempt() -> None:
    lane = translate(minimal(num_retries=0, timeout=20)).config["lanes"]["m"]
    assert lane["deadline"] == "20s"
    assert not {"retries", "retry_on", "attempt_timeout"} & set(lane)


def test_every_key_is_translated_or_listed() -> None:
    out = imported("every_key.yaml")
    config = out.config
    summarize = config["deployments"]["summarize"]
    assert summarize == {
        "provider": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4o",
        "api_key": "os.environ/OPENAI_API_KEY",
        "rpm": 60,
        "tpm": 90000,
        "context_window": 128000,
        "price": {"input": 2.5, "output": 10.0},
    }
    long = config["deployments"]["summarize-long"]
    assert (long["provider"], long["max_tokens"], long["context_window"]) == (
        "anthropic",
        4096,
        200000,
    )
    lane = config["lanes"]["summarize"]
    assert lane["attempt_timeout"] == "8s" and lane["first_byte_timeout"] == "4s"
    assert lane["retries"] == 4  # RateLimitErrorRetries 4 overrides num_retries 1
    assert lane["retry_on"] == {
        408: 1, 409: 1, 429: 4, 500: 1, 502: 1, 503: 1, 504: 1, "timeout": 1, "connect": 1
    }  # fmt: skip
    assert lane["breaker"] == {"failures": 3, "window": "60s", "cooldown": "30s"}
    assert lane["fallback_lanes"] == ["summarize-long"]
    assert lane["cache"] == {"ttl": "600s"}
    assert config["lanes"]["summarize-long"]["attempt_timeout"] == "45s"  # request_timeout
    assert config["lanes"]["embed"]["kind"] == "embed"
    assert config["lanes"]["embed"]["embed_cache"] is True
    assert "legacy" not in config["lanes"]
    assert config["state"] == {"url": "redis://:hunter2@127.0.0.1:6379"}
    assert config["cache"] == {"url": "redis://127.0.0.1:6380"}
    assert config["telemetry"] == {"url": "postgresql://llm@127.0.0.1:5432/litellm"}
    assert config["server"]["keys"] == [{"name": "master", "key": "os.environ/LITELLM_MASTER_KEY"}]
    notes = " ".join(out.notes["summarize"])
    assert "InternalServerErrorRetries: 1 is inert" in notes
    assert "even the only one of a group" in notes
    assert "context-window errors only" in notes
    gaps = "\n".join(out.gaps)
    for key in (
        "retry_policy.BadRequestErrorRetries",
        "bedrock/anthropic.claude-v2",
        "content_policy_fallbacks",
        "routing_strategy: latency-based-routing",
        "litellm_settings.drop_params",
        "general_settings.alerting",
        "environment_variables",
    ):
        assert key in gaps
    assert len(out.gaps) == 8
    assert any("max_retries" in line for line in out.header)
    assert any("set_verbose" in line for line in out.header)


def test_a_large_config_keeps_groups_orders_weights_aliases_and_fallbacks() -> None:
    out = imported("large.yaml")
    config = out.config
    gpt = config["lanes"]["gpt-4o"]
    assert gpt["sources"] == [
        {"deployment": "gpt-4o-1", "priority": 1, "weight": 2.0},
        {"deployment": "gpt-4o-2", "priority": 1, "weight": 1.0},
        {"deployment": "gpt-4o-3", "priority": 2},
    ]
    east = config["deployments"]["gpt-4o-1"]
    assert (east["provider"], east["model"], east["api_version"]) == (
        "azure",
        "gpt-4o-eastus",
        "2024-10-21",
    )
    assert gpt["fallback_lanes"] == ["gpt-4o-mini"]
    assert config["lanes"]["claude-sonnet"]["fallback_lanes"] == ["gpt-4o", "gpt-4o-mini"]
    assert config["lanes"]["claude-sonnet"]["attempt_timeout"] == "120s"
    assert "fallback_lanes" not in config["lanes"]["gpt-4o-mini"]
    embeds = config["lanes"]["text-embedding-3-large"]
    assert embeds["fallback_lanes"] == ["text-embedding-3-small"]
    assert config["lanes"]["qwen"] == {
        "kind": "chat",
        "deadline": "60s",
        "breaker": {"failures": 5, "window": "60s", "cooldown": "5s"},
        "sources": [{"deployment": "qwen"}],
        "fallback_lanes": ["gpt-4o-mini"],
    }
    assert config["deployments"]["local-llama"]["base_url"] == "http://10.0.0.5:8000/v1"
    assert config["aliases"] == {"gpt-4": "gpt-4o", "claude": "claude-sonnet"}
    assert config["state"] == {"url": "redis://redis.internal:6379/0"}
    assert out.gaps == ["litellm_settings.success_callback: no laneway equivalent; not carried"]
    assert len(config["lanes"]) == 7


@pytest.mark.parametrize(("name", "status"), [("every_key.yaml", 1), ("large.yaml", 1)])
def test_the_output_loads_and_checks_clean(
    name: str,
    status: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for variable in ENV:
        monkeypatch.setenv(variable, "set")
    output = tmp_path / "laneway.yaml"
    assert main(["import", "litellm", str(HERE / name), "-o", str(output)]) == status
    assert "key(s) not carried" in capsys.readouterr().err
    text = output.read_text()
    assert "# Not carried (no laneway equivalent; the exit status was 1):" in text
    parse_config(text)
    assert main(["check", "--strict", str(output)]) == 0


def test_the_seed_example_imports_completely_as_committed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "laneway.yaml"
    config = "examples/litellm/config.yaml"
    assert main(["import", "litellm", str(EXAMPLE / "config.yaml"), "-o", str(output)]) == 0
    assert "imported 3 lane(s): complete" in capsys.readouterr().err
    committed = (EXAMPLE / "laneway.yaml").read_text()
    assert output.read_text().replace(str(EXAMPLE / "config.yaml"), config) == committed
    lanes = parse_config(committed).lanes
    summarize = lanes["engram-summarize"]
    assert (summarize.attempt_timeout, summarize.retries, summarize.deadline) == (7.0, 2, 24.0)
    assert (lanes["engram-embed"].retries, lanes["engram-embed"].per_attempt) == (3, 60.0)
    assert (lanes["fovea-scout"].retries, lanes["fovea-scout"].deadline) == (0, 20.0)


def test_an_unreadable_config_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("- not a mapping\n")
    assert main(["import", "litellm", str(path)]) == 2
    assert main(["import", "litellm", str(tmp_path / "missing.yaml")]) == 2
