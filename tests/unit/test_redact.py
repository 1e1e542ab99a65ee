"""The redactor: each secret in each of its forms, nothing else, and at every door it guards."""

from __future__ import annotations

import logging

import pytest

from laneway.config.models import LanewayConfig
from laneway.config.secrets import configured_secrets
from laneway.core import redact
from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.redact import NO_SECRETS, Redactor
from laneway.core.transport import HttpRequest, HttpResponse
from laneway.engine.redaction import RedactingTransport
from laneway.http import MockTransport

KEY = "sk-live/Abc+123"


def test_every_form_of_a_secret_is_cut_and_nothing_else() -> None:
    redactor = Redactor([KEY, "abc"])
    said = f'key {KEY}, in a URL sk-live%2FAbc%2B123, in JSON "sk-live\\/Abc+123"... abc'
    assert redactor.text(said).count("[redacted]") == 2
    assert redactor.text(f"Bearer {KEY}") == "Bearer [redacted]"
    assert redactor.bytes(f"x{KEY}x".encode()) == b"x[redacted]x"
    assert redactor.text("abc stays: too short to be told from text").startswith("abc")


def test_no_secrets_returns_the_very_input() -> None:
    text, raw = "anything", b"anything"
    assert not NO_SECRETS.active
    assert NO_SECRETS.text(text) is text and NO_SECRETS.bytes(raw) is raw
    clean = "no secret here"
    assert Redactor([KEY]).text(clean) is clean


def test_the_configuration_names_its_secrets() -> None:
    config = LanewayConfig.model_validate(
        {
            "lanes": {
                "a": {
                    "sources": [{"base_url": "http://x", "model": "m", "api_key": "os.environ/K"}]
                }
            },
            "server": {"keys": [{"name": "n", "key": "literal-server-key"}]},
            "state": {"url": "redis://:red%40pass@127.0.0.1:6379/0"},
            "telemetry": {"url": "postgresql://u@h/db?password=pg-pass&schema=s"},
        }
    )
    found = configured_secrets(config, {"K": "upstream-key"})
    assert sorted(found) == ["literal-server-key", "pg-pass", "red@pass", "upstream-key"]


def test_log_records_are_redacted_with_their_tracebacks(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redact, "_log_redactor", NO_SECRETS)
    factory = logging.getLogRecordFactory()
    try:
        redact.redact_logs(Redactor([KEY]))
        log = logging.getLogger("laneway.test")
        with caplog.at_level(logging.WARNING, logger="laneway.test"):
            log.warning("upstream said %s", f"Bearer {KEY}")
            try:
                raise ValueError(f"bad key {KEY}")
            except ValueError:
                log.exception("failed")
    finally:
        logging.setLogRecordFactory(factory)
    assert KEY not in caplog.text
    assert "Bearer [redacted]" in caplog.text and "bad key [redacted]" in caplog.text


def echoing(request: HttpRequest) -> HttpResponse:
    said = request.headers["authorization"].encode()
    if request.url.endswith("/boom"):
        raise AttemptFailure(FailureKind.CONNECT, f"cannot reach upstream with {said.decode()}")
    if request.url.endswith("/stream"):
        return HttpResponse(200, {}, b'data: {}\ndata: {"error": "' + said + b'"}\n')
    return HttpResponse(401, {}, b'{"error": {"message": "Incorrect API key: ' + said + b'"}}')


async def test_the_transport_redacts_errors_failures_and_stream_lines() -> None:
    transport = RedactingTransport(MockTransport(echoing), Redactor([KEY]))
    headers = {"authorization": f"Bearer {KEY}"}
    answer = await transport.send(HttpRequest("POST", "http://up/x", headers))
    assert answer.body == b'{"error": {"message": "Incorrect API key: Bearer [redacted]"}}'
    with pytest.raises(AttemptFailure) as failure:
        await transport.send(HttpRequest("POST", "http://up/boom", headers))
    assert failure.value.message == "cannot reach upstream with Bearer [redacted]"
    async with transport.stream(HttpRequest("POST", "http://up/stream", headers)) as stream:
        lines = [line async for line in stream.lines()]
    assert lines[1] == b'data: {"error": "Bearer [redacted]"}'


def test_secrets_of_any_opening_and_stored_key_shapes_are_cut_where_they_are() -> None:
    """Values are searched only when they hold a secret's opening: every secret is still cut."""
    stored = "sk-lw-" + "A" * 43
    redactor = Redactor([KEY, "AIzaSyD-gemini-key"], [redact.STORED_KEY_PATTERN])
    said = f"a {KEY} b AIzaSyD-gemini-key c {stored} d"
    assert redactor.text(said) == "a [redacted] b [redacted] c [redacted] d"
    assert redactor.bytes(said.encode()) == b"a [redacted] b [redacted] c [redacted] d"
    clean = b"sk- and AIza alone are not secrets"
    assert redactor.bytes(clean) is clean
