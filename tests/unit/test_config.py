"""laneway.yaml: strict keys with line numbers, units, secrets, coherence checks."""

import pytest

from laneway.config import Secret, parse_config
from laneway.config.models import ChatCacheConfig, ChatLaneConfig
from laneway.core.errors import ConfigError
from laneway.core.units import parse_duration, parse_size

MINIMAL = """
lanes:
  engram-summarize:
    kind: chat
    deadline: 28s
    attempt_timeout: 8s
    retries: 2
    retry_on: [503, timeout, connect]
    backoff: {kind: constant, base: 1s}
    client_deadline: 30s
    sources:
      - provider: openai
        base_url: http://127.0.0.1:9100/b/ok/v1
        model: some/model
        api_key: os.environ/OPENROUTER_API_KEY
"""


def test_issue_schema_parses() -> None:
    lane = parse_config(MINIMAL).lanes["engram-summarize"]
    assert lane.deadline == 28.0
    assert lane.per_attempt == 8.0
    assert lane.retry_on == [503, "timeout", "connect"]
    assert lane.sources[0].api_key == Secret(env="OPENROUTER_API_KEY")


def test_unknown_key_is_named_with_its_line() -> None:
    text = MINIMAL.replace("    retries: 2\n", "    retries: 2\n    num_retries: 3\n")
    with pytest.raises(ConfigError) as err:
        parse_config(text, origin="laneway.yaml")
    assert "laneway.yaml:8: lanes.engram-summarize.num_retries: unknown key" in str(err.value)


def test_unknown_key_in_a_source() -> None:
    text = MINIMAL.replace("model: some/model", "model: some/model\n        timeout: 3")
    with pytest.raises(ConfigError, match=r"sources\[0\]\.timeout: unknown key"):
        parse_config(text)


def test_retries_without_retry_on_is_an_error() -> None:
    with pytest.raises(ConfigError, match="retry_on is empty"):
        parse_config(MINIMAL.replace("    retry_on: [503, timeout, connect]\n", ""))


def test_rejection_codes_cannot_be_retried() -> None:
    with pytest.raises(ConfigError, match="400 is a rejection"):
        parse_config(MINIMAL.replace("[503, timeout, connect]", "[400]"))


def test_unknown_retry_class_is_an_error() -> None:
    with pytest.raises(ConfigError, match="retry_on"):
        parse_config(MINIMAL.replace("[503, timeout, connect]", "[503, flaky]"))


def test_defaults_are_explicit_and_safe() -> None:
    text = "lanes:\n  x:\n    sources: [{base_url: 'http://127.0.0.1:1/v1', model: m}]\n"
    lane = parse_config(text).lanes["x"]
    assert lane.retries == 0
    assert lane.retry_on == []


@pytest.mark.parametrize(
    ("text", "seconds"), [("250ms", 0.25), ("7s", 7.0), ("2m", 120.0), (3, 3.0), ("1.5s", 1.5)]
)
def test_durations(text, seconds) -> None:
    assert parse_duration(text) == seconds


def test_sizes() -> None:
    assert parse_size("32MiB") == 32 * 1024 * 1024
    with pytest.raises(ValueError):
        parse_size("32 megs")


def test_secret_forms_and_redaction() -> None:
    env = {"K": "secret-value"}
    assert Secret.parse("os.environ/K").resolve(env) == "secret-value"
    assert Secret.parse("${K}").resolve(env) == "secret-value"
    assert Secret.parse("${MISSING}").resolve(env) is None
    assert "sk-live" not in repr(Secret.parse("sk-live-123"))


@pytest.mark.parametrize(
    ("value", "parsed"), [("true", True), ("false", False), ("restart", "restart")]
)
def test_continue_on_cut_is_a_switch_or_restart(value: str, parsed: object) -> None:
    text = MINIMAL.replace("    retries: 2\n", f"    retries: 2\n    continue_on_cut: {value}\n")
    lane = parse_config(text).lanes["engram-summarize"]
    assert isinstance(lane, ChatLaneConfig) and lane.continue_on_cut == parsed


def test_continue_on_cut_names_its_values() -> None:
    text = MINIMAL.replace("    retries: 2\n", "    retries: 2\n    continue_on_cut: splice\n")
    with pytest.raises(ConfigError, match="continue_on_cut"):
        parse_config(text)


def test_retry_on_takes_a_count_per_class() -> None:
    text = MINIMAL.replace("retry_on: [503, timeout, connect]", "retry_on: {503: 2, timeout: 1}")
    assert parse_config(text).lanes["engram-summarize"].retry_on == {503: 2, "timeout": 1}


@pytest.mark.parametrize(
    ("retry_on", "retries", "message"),
    [
        ("{503: 2}", "0", "retry_on gives retry counts but retries is 0"),
        ("{503: 0}", "2", "greater than or equal to 1"),
        ("{400: 1}", "2", "400 is a rejection"),
        ("{slow: 1}", "2", "retry_on"),
    ],
)
def test_retry_on_counts_are_checked(retry_on: str, retries: str, message: str) -> None:
    text = MINIMAL.replace("retry_on: [503, timeout, connect]", f"retry_on: {retry_on}")
    text = text.replace("retries: 2", f"retries: {retries}")
    with pytest.raises(ConfigError, match=message):
        parse_config(text)


def test_pushback_is_off_unless_declared() -> None:
    assert parse_config(MINIMAL).lanes["engram-summarize"].max_pushbacks == 0


def test_a_cache_is_declared_with_a_ttl_and_the_old_switch_says_what_replaced_it() -> None:
    from laneway.config.load import parse_config
    from laneway.core.errors import ConfigError

    base = "lanes:\n  a:\n    sources: [{base_url: 'http://127.0.0.1:9/v1', model: m}]\n"

    def cache(text: str) -> ChatCacheConfig | None:
        lane = parse_config(text).lanes["a"]
        assert isinstance(lane, ChatLaneConfig)
        return lane.cache

    assert cache(base) is None
    assert cache(base + "    cache: false\n") is None
    declared = cache(base + "    cache: {ttl: 10m, when: temperature0}\n")
    assert declared is not None and (declared.ttl, declared.when) == (600.0, "temperature0")
    with pytest.raises(ConfigError, match=r"cache\.enabled is gone"):
        parse_config(base + "    cache: {enabled: true}\n")
    with pytest.raises(ConfigError, match=r"lanes\.a\.cache\.ttl: required, and not given"):
        parse_config(base + "    cache: {when: always}\n")
