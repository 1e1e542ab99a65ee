"""`laneway import litellm`: LiteLLM proxy configs translated field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from laneway.cli.main import main
from laneway.config import parse_config
from laneway.migrate.litellm import Translation, deployments, translate

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
    header = " ".join(out.header)
    assert "openai.DEFAULT_MAX_RETRIES = 2" in header
    assert "LiteLLM's default request_timeout" in header
    assert "never enforces" in header and "zeros" in header and "$0" in header
    assert "never cools a single-deployment group" in header
    assert out.notes["m"] == [] and out.complete


def test_num_retries_zero_is_one_attempt() -> None:
    lane = translate(minimal(num_retries=0, timeout=20)).config["lanes"]["m"]
    assert lane["deadline"] == "20s"
    assert not {"retries", "retry_on", "attempt_timeout"} & set(lane)


def test_router_timeout_wins_over_request_timeout_as_in_litellms_router() -> None:
    """Fails before the fix: request_timeout 60 was ranked first (60s, 246s deadline)."""
    data = {
        **minimal(),
        "router_settings": {"timeout": 30, "num_retries": 3},
        "litellm_settings": {"request_timeout": 60},
    }
    lane = translate(data).config["lanes"]["m"]
    assert (lane["attempt_timeout"], lane["deadline"]) == ("30s", "126s")
    only_lite = {**minimal(), "litellm_settings": {"request_timeout": 60}}
    assert translate(only_lite).config["lanes"]["m"]["attempt_timeout"] == "60s"
    own = {**minimal(timeout=8), "router_settings": {"timeout": 30}}
    assert translate(own).config["lanes"]["m"]["attempt_timeout"] == "8s"


def test_an_embedding_model_is_an_embed_lane_with_its_dimensions() -> None:
    """Fails before the fix: openai/text-embedding-3-small became a chat lane."""
    out = translate(minimal() | {"model_list": [
        {"model_name": "e", "litellm_params": {"model": "openai/text-embedding-3-small"}},
        {"model_name": "ada", "litellm_params": {"model": "text-embedding-ada-002"}},
        {"model_name": "r", "litellm_params": {"model": "openai/rerank-v1"}},
    ]})  # fmt: skip
    lanes = out.config["lanes"]
    assert (lanes["e"]["kind"], lanes["e"]["dimensions"]) == ("embed", 1536)
    assert lanes["ada"]["kind"] == "embed" and "dimensions" not in lanes["ada"]
    assert "r" not in lanes
    assert any("mode rerank" in gap for gap in out.gaps)


def test_settings_laneway_has_are_carried() -> None:
    """Fails before the fix: each of these was listed as having no laneway equivalent."""
    entries = [("x", "east"), ("y", "west")]
    data = {
        "model_list": [
            {"model_name": "m", "litellm_params": {"model": f"openai/{m}"}, "model_info": {"id": i}}
            for m, i in entries
        ],
        "router_settings": {"retry_after": 2},
        "litellm_settings": {
            "max_budget": 100, "budget_duration": "30d", "callbacks": ["prometheus", "langfuse"],
            "drop_params": True,
        },
        "general_settings": {"master_key": "os.environ/MASTER", "max_request_size_mb": 20},
    }  # fmt: skip
    out = translate(data)
    config = out.config
    assert set(config["deployments"]) == {"east", "west"}
    assert config["server"]["max_request_bytes"] == "20MiB"
    assert config["server"]["keys"][0]["budget"] == {"monthly": 100.0}
    assert config["lanes"]["m"]["backoff"]["base"] == "2000ms"
    header = " ".join(out.header)
    assert "/metrics" in header and "OTEL_EXPORTER_OTLP_ENDPOINT" in header
    assert "drops none" in header
    assert out.complete, out.gaps


def test_env_references_are_kept_never_resolved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fails before the fix: env-referenced Redis and database URLs were dropped as gaps."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("REDIS_HOST", "redis.internal")
    cache_from_env = {"type": "redis", "url": "os.environ/CACHE_URL"}
    data = {
        **minimal(api_key="os.environ/OPENAI_API_KEY", api_base="os.environ/OPENAI_BASE"),
        "router_settings": {"redis_host": "os.environ/REDIS_HOST", "redis_port": 6379},
        "general_settings": {"database_url": "os.environ/DATABASE_URL"},
        "litellm_settings": {"cache": True, "cache_params": cache_from_env},
    }
    out = translate(data)
    deployment = out.config["deployments"]["m"]
    assert (deployment["api_key"], deployment["base_url"]) == (
        "os.environ/OPENAI_API_KEY",
        "os.environ/OPENAI_BASE",
    )
    assert out.config["state"] == {"url": "redis://${REDIS_HOST}:6379"}
    assert out.config["telemetry"] == {"url": "os.environ/DATABASE_URL"}
    assert out.config["cache"] == {"url": "os.environ/CACHE_URL"}
    assert out.complete, out.gaps
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["import", "litellm", str(path)]) == 0  # OPENAI_BASE and the rest unset here
    written = capsys.readouterr().out
    assert "os.environ/OPENAI_BASE" in written and "redis.internal" not in written


def test_context_window_fallbacks_move_only_context_length_refusals() -> None:
    """Fails before the fix: the pair became a fallback_lanes entry taken on any failure."""
    small = {"model": "openai/small"}
    large = {"model": "openai/large"}
    data = {
        "model_list": [
            {"model_name": "a", "litellm_params": small, "model_info": {"max_input_tokens": 8000}},
            {
                "model_name": "b",
                "litellm_params": large,
                "model_info": {"max_input_tokens": 128000},
            },
        ],
        "router_settings": {"context_window_fallbacks": [{"a": ["b"]}]},
    }
    out = translate(data)
    lane = out.config["lanes"]["a"]
    assert "fallback_lanes" not in lane
    assert lane["sources"] == [{"deployment": "a"}, {"deployment": "b", "priority": 1}]
    assert any("chain a -> b" in note for note in out.notes["a"])


def test_every_key_is_translated_or_listed() -> None:
    out = imported("every_key.yaml")
    config = out.config
    summarize = config["deployments"]["summarize-primary"]  # model_info.id
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
    assert lane["sources"][-1] == {"deployment": "summarize-long", "priority": 1}
    assert lane["cache"] == {"ttl": "600s"}
    assert config["lanes"]["summarize-long"]["attempt_timeout"] == "30s"  # router_settings.timeout
    assert config["lanes"]["embed"]["kind"] == "embed"
    assert config["lanes"]["embed"]["embed_cache"] is True
    assert config["lanes"]["embed"]["dimensions"] == 3072
    assert "legacy" not in config["lanes"]
    assert config["state"] == {"url": "redis://:hunter2@127.0.0.1:6379"}
    assert config["cache"] == {"url": "redis://127.0.0.1:6380"}
    assert config["telemetry"] == {"url": "postgresql://llm@127.0.0.1:5432/litellm"}
    assert config["server"]["keys"] == [{"name": "master", "key": "os.environ/LITELLM_MASTER_KEY"}]
    notes = " ".join(out.notes["summarize"])
    assert "retry_policy gives" in notes and "retry_on map" in notes
    assert "even the only one of a group" in " ".join(out.header)
    assert "chain summarize -> summarize-long" in notes


def test_every_key_not_carried_is_listed_and_inert_ones_noted() -> None:
    out = imported("every_key.yaml")
    gaps = "\n".join(out.gaps)
    for key in (
        "retry_policy.BadRequestErrorRetries",
        "bedrock/anthropic.claude-v2",
        "content_policy_fallbacks",
        "routing_strategy: latency-based-routing",
        "general_settings.alerting",
        "environment_variables",
    ):
        assert key in gaps
    assert len(out.gaps) == 7
    assert any("max_retries" in line for line in out.header)
    assert any("set_verbose" in line for line in out.header)
    assert any("drop_params" in line for line in out.header)


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
    assert out.gaps == []
    assert any("Langfuse" in line for line in out.header)
    assert len(config["lanes"]) == 7


@pytest.mark.parametrize(("name", "status"), [("every_key.yaml", 1), ("large.yaml", 0)])
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
    err = capsys.readouterr().err
    assert ("key(s) not carried" in err) == bool(status)
    text = output.read_text()
    assert ("# Not carried (no laneway equivalent; the exit status was 1):" in text) == bool(status)
    parse_config(text)
    assert main(["check", str(output)]) == 0


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


def test_litellms_model_map_gives_mode_provider_and_vector_size_where_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = {"acme-vectors": {"mode": "embedding", "litellm_provider": "openai"}}
    monkeypatch.setattr(deployments, "model_map", lambda: known)
    entry = {"model": "acme-vectors"}
    info = {"output_vector_size": 256}
    data = {"model_list": [{"model_name": "v", "litellm_params": entry, "model_info": info}]}
    out = translate(data)
    assert out.config["deployments"]["v"]["provider"] == "openai"
    assert (out.config["lanes"]["v"]["kind"], out.config["lanes"]["v"]["dimensions"]) == (
        "embed",
        256,
    )
