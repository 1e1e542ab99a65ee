"""The access log: one line per call, JSON or text, naming the key but never holding it."""

from __future__ import annotations

import asyncio
import io
import json
import urllib.error
import urllib.request
from typing import Any

import orjson

from laneway.core.records import CallMeta, CallRecord
from laneway.core.types import Attempt, Usage
from laneway.server.access_log import AccessLog, json_line, text_line
from tests.server.logged_serve import AUTH, SECRET, LoggedServe
from tests.server.test_serve_cli import HELLO

WHEN = 1_750_000_000.0
OK = CallRecord(
    WHEN,
    "engram",
    "chat",
    "ok",
    0.25,
    (Attempt("a", "503", 0.01, 503, waited=0.1), Attempt("a", "ok", 0.12, 200)),
    CallMeta("req-1", "team-a"),
    source="a",
    model="m",
    status=200,
    usage=Usage(10, 5, 15, source="provider"),
    cache="miss",
)
FAILED = CallRecord(
    WHEN,
    "engram",
    "chat",
    "error",
    1.5,
    (Attempt("a", "timeout", 1.5, message="no answer within attempt_timeout 1.50s"),),
    CallMeta("req-2", None),
    source="a",
    error="upstream_timeout",
    status=504,
)


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> int:
    """POST JSON with ``headers``; the status, error or not."""
    data = orjson.dumps(body)
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def price(record: CallRecord) -> tuple[float | None, str]:
    return (0.00002, "priced") if record.usage.known else (None, "usage_unknown")


def test_a_json_line_holds_what_a_reader_needs() -> None:
    line = json.loads(json_line(OK, 0.00002, "priced"))
    assert line["time"] == "2025-06-15T15:06:40.000+00:00"
    assert (line["request_id"], line["key"], line["lane"], line["status"]) == (
        "req-1",
        "team-a",
        "engram",
        200,
    )
    assert [a["outcome"] for a in line["attempts"]] == ["503", "ok"]
    assert line["tokens"] == {
        "prompt": 10,
        "completion": 5,
        "reasoning": None,
        "cached": None,
        "source": "provider",
    }
    assert (line["cost_usd"], line["cache"], line["latency_ms"]) == (0.00002, "miss", 250.0)
    assert "error" not in line


def test_a_failed_call_says_why_and_unknown_stays_unknown() -> None:
    line = json.loads(json_line(FAILED, None, "usage_unknown"))
    assert line["error"] == "upstream_timeout" and line["status"] == 504
    assert line["reason"] == "no answer within attempt_timeout 1.50s"
    assert line["tokens"] is None and line["cost_usd"] is None and line["key"] is None


def test_a_text_line_is_for_people() -> None:
    assert text_line(OK, 0.00002, "priced") == (
        "2025-06-15T15:06:40.000+00:00 200 engram source=a 250ms attempts=2(503,ok) "
        "ttfb=- tokens=10/5 cost=$0.000020 cache=miss key=team-a request_id=req-1\n"
    )
    failed = text_line(FAILED, None, "usage_unknown")
    assert 'error=upstream_timeout reason="no answer within attempt_timeout 1.50s"' in failed
    assert "tokens=- cost=n/a" in failed


async def test_lines_are_written_on_the_next_turn_of_the_loop_in_one_write() -> None:
    out = io.StringIO()
    log = AccessLog(price, out)
    log.observe(OK)
    log.observe(FAILED)
    assert out.getvalue() == "", "the request path only appends"
    await asyncio.sleep(0)
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["request_id"] for line in lines] == ["req-1", "req-2"]


def test_without_a_loop_a_line_is_written_at_once() -> None:
    out = io.StringIO()
    AccessLog(price, out, "text").observe(OK)
    assert out.getvalue().startswith("2025-06-15T15:06:40.000+00:00 200 engram")


def test_laneway_serve_logs_every_call_by_key_name(logged_serve: LoggedServe) -> None:
    headers = {**AUTH, "x-request-id": "trace-me"}
    chat = f"{logged_serve.url}/v1/chat/completions"
    assert post(chat, {"model": "good", "messages": HELLO}, headers) == 200
    assert post(chat, {"model": "bad", "messages": HELLO}, headers) == 502  # upstream 401
    lines = logged_serve.log_lines({"good", "bad"}, count=2)
    assert SECRET not in logged_serve.banner + logged_serve.output
    by_lane = {line["lane"]: line for line in lines}
    assert by_lane["good"]["key"] == "team-a" and by_lane["good"]["request_id"] == "trace-me"
    assert by_lane["good"]["status"] == 200 and by_lane["good"]["tokens"]["prompt"] > 0
    assert by_lane["bad"]["outcome"] == "error" and by_lane["bad"]["error"]
    assert "401" in json.dumps(by_lane["bad"]["attempts"])
