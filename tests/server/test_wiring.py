"""What ``laneway serve`` wires in: metrics, telemetry, the cache, OCR and honest usage.

Every gateway here comes from ``serve.build_gateway``, the composition
``laneway serve`` runs, so these tests cover the wiring as shipped.
"""

from __future__ import annotations

import base64
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from laneway.app.composer import build_gateway
from laneway.cli.demo import PNG_1X1
from laneway.config.models import LanewayConfig
from laneway.sim import RunningSim
from tests.helpers import unique_spec
from tests.server.support import HELLO, RunningGateway, hits, post, serve_app, source

PNG = base64.b64decode(PNG_1X1)
PNG_URL = f"data:image/png;base64,{PNG_1X1}"
SPECS = {
    "counted": unique_spec(""),
    "chat": unique_spec(""),
    "cached": unique_spec(""),
    "bare": unique_spec("nousage"),
    "est": unique_spec("nousage"),
    "embed_bare": unique_spec("nousage"),
    "ocr": unique_spec(""),
    "big": unique_spec("dims=512"),
}
LANE_EXTRAS: dict[str, dict[str, Any]] = {
    "cached": {"cache": {"ttl": "1h", "when": "temperature0"}},
    "est": {"estimate_missing_usage": True},
    "embed_bare": {"kind": "embed"},
    "ocr": {"kind": "ocr"},
    "big": {"kind": "embed", "max_response_bytes": "1KiB"},
}


def settings(sim: RunningSim, lanes: list[str], **server: Any) -> LanewayConfig:
    """Lanes named from ``SPECS``; telemetry to ``calls.sqlite3``, flushed only at shutdown."""
    body = {n: {**LANE_EXTRAS.get(n, {}), "sources": [source(sim, SPECS[n])]} for n in lanes}
    return LanewayConfig.model_validate(
        {
            "lanes": body,
            "server": server,
            "telemetry": {"url": "calls.sqlite3", "flush_interval": "60s"},
            "cache": {"url": ":memory:"},
        }
    )


@pytest.fixture(scope="module")
def gw(sim: RunningSim, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    folder = tmp_path_factory.mktemp("gateway")
    with serve_app(build_gateway(settings(sim, list(SPECS)), {}, folder)) as running:
        yield running


async def chat(http: aiohttp.ClientSession, gw: RunningGateway, lane: str, **params: Any):
    body = {"model": lane, "messages": HELLO, **params}
    return await post(http, f"{gw.v1}/chat/completions", body)


async def scrape(http: aiohttp.ClientSession, url: str, **headers: str) -> dict[str, float]:
    """``GET /metrics`` as ``{"name{label=value,...}": value}``, labels sorted."""
    async with http.get(f"{url}/metrics", headers=headers) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/plain")
        text = await response.text()
    return {
        sample.name + "{" + ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items())) + "}": (
            sample.value
        )
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_count_a_call_and_watch_the_telemetry_queue(gw, http) -> None:
    assert (await chat(http, gw, "counted"))[0] == 200
    samples = await scrape(http, gw.url)
    assert samples["laneway_requests_total{lane=counted,outcome=ok,source=openai:sim-model}"] == 1
    assert samples["laneway_telemetry_dropped_total{}"] == 0  # the writer's queue is watched


async def test_repeated_temperature_0_chat_is_a_miss_then_a_hit(gw, http, sim) -> None:
    first = await chat(http, gw, "cached", temperature=0)
    second = await chat(http, gw, "cached", temperature=0)
    assert [r[1]["x-laneway-cache"] for r in (first, second)] == ["miss", "hit"]
    assert second[2]["choices"] == first[2]["choices"]
    assert second[1]["x-laneway-attempts"] == "0"
    assert await hits(http, sim, SPECS["cached"]) == 1
    _, headers, _ = await chat(http, gw, "cached")  # no temperature 0: not cached
    assert headers["x-laneway-cache"] == "bypass"


async def test_cache_control_skips_or_refreshes_the_cache(gw, http, sim) -> None:
    body = {"model": "cached", "messages": [{"role": "user", "content": "fresh"}], "temperature": 0}
    url = f"{gw.v1}/chat/completions"
    statuses = [
        (await post(http, url, body, **{"Cache-Control": control}))[1]["x-laneway-cache"]
        for control in ("no-store", "max-age=0", "no-cache", "no-cache, no-store", "private")
    ]
    assert statuses == ["bypass", "miss", "refresh", "bypass", "hit"]


async def test_usage_header_says_whose_figures_and_unknown_usage_is_left_out(gw, http) -> None:
    _, headers, answer = await chat(http, gw, "chat")
    assert headers["x-laneway-usage"] == "provider" and answer["usage"]["total_tokens"] > 0
    _, headers, answer = await chat(http, gw, "bare")
    assert headers["x-laneway-usage"] == "none" and "usage" not in answer
    _, headers, answer = await chat(http, gw, "est")
    assert headers["x-laneway-usage"] == "estimated" and answer["usage"]["prompt_tokens"] > 0
    body = {"model": "embed_bare", "input": ["a", "b"]}
    _, headers, answer = await post(http, f"{gw.v1}/embeddings", body)
    assert headers["x-laneway-usage"] == "none" and "usage" not in answer
    assert headers["x-laneway-cache"] == "bypass" and len(answer["data"]) == 2


async def test_base64_embeddings_are_the_float32s_of_the_float_ones(gw, http) -> None:
    """Relayed as the upstream sent them; usage (or its absence) the same in both encodings."""
    url = f"{gw.v1}/embeddings"
    body = {"model": "embed_bare", "input": ["a", "b"]}
    _, float_headers, as_floats = await post(http, url, {**body, "encoding_format": "float"})
    _, packed_headers, as_base64 = await post(http, url, {**body, "encoding_format": "base64"})
    for item, packed in zip(as_floats["data"], as_base64["data"], strict=True):
        raw = base64.b64decode(packed["embedding"])
        vector = item["embedding"]
        assert struct.unpack(f"<{len(raw) // 4}f", raw) == struct.unpack(
            f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector)
        )
    assert "usage" not in as_floats and "usage" not in as_base64
    assert float_headers["x-laneway-usage"] == packed_headers["x-laneway-usage"] == "none"


async def test_streams_bypass_the_cache_and_send_no_usage_header(gw, http) -> None:
    body = {"model": "chat", "messages": HELLO, "stream": True, "temperature": 0}
    async with http.post(f"{gw.v1}/chat/completions", json=body) as response:
        assert response.status == 200
        assert response.headers["x-laneway-cache"] == "bypass"
        assert "x-laneway-usage" not in response.headers
        await response.read()


async def test_ocr_reads_a_data_url_document(gw, http) -> None:
    body = {"model": "ocr", "document": {"type": "image_url", "image_url": PNG_URL}}
    status, headers, answer = await post(http, f"{gw.v1}/ocr", body)
    assert status == 200, answer
    assert answer["pages"][0]["markdown"].startswith("sim")
    assert answer["usage_info"] == {"pages_processed": 1, "doc_size_bytes": len(PNG)}
    assert answer["model"] == "sim-model" and answer["usage"]["prompt_tokens"] > 0
    assert headers["x-laneway-lane"] == "ocr" and headers["x-laneway-usage"] == "provider"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "ocr"}, "document"),
        ({"model": "ocr", "document": {"type": "file"}}, "document.type"),
        (
            {"model": "ocr", "document": {"type": "image_url", "image_url": "https://x/a.png"}},
            "document.image_url",
        ),
        (
            {"model": "ocr", "document": {"type": "document_url", "document_url": "data:,x"}},
            "document.document_url",
        ),
        ({"model": "chat", "document": {"type": "image_url", "image_url": PNG_URL}}, "model"),
    ],
)
async def test_ocr_bad_request_is_400_naming_the_field(gw, http, body, field) -> None:
    status, _, answer = await post(http, f"{gw.v1}/ocr", body)
    assert status == 400 and answer["error"]["param"] == field


async def test_answer_over_max_response_bytes_is_502_naming_the_limit(gw, http) -> None:
    status, _, answer = await post(http, f"{gw.v1}/embeddings", {"model": "big", "input": "x"})
    assert status == 502 and answer["error"]["code"] == "response_too_large"
    assert "max_response_bytes (1024 bytes)" in answer["error"]["message"]
    assert answer["laneway"]["attempts"][0]["outcome"] == "too_large"


async def test_telemetry_rows_are_flushed_at_shutdown(sim, http, tmp_path: Path) -> None:
    db = tmp_path / "calls.sqlite3"
    with serve_app(build_gateway(settings(sim, ["chat", "bare"]), {}, tmp_path)) as gw:
        assert (await chat(http, gw, "chat"))[0] == 200
        assert (await chat(http, gw, "bare"))[0] == 200
        assert not db.exists()  # a 60 s flush interval: nothing written yet
    with sqlite3.connect(db) as conn:
        query = "SELECT lane, outcome, usage_source FROM calls ORDER BY lane"
        rows = conn.execute(query).fetchall()
    conn.close()
    assert rows == [("bare", "ok", "none"), ("chat", "ok", "provider")]


KEYS = [
    {"name": "all", "key": "key-all"},
    {"name": "only-chat", "key": "key-chat", "lanes": ["chat"]},
    {"name": "scraper", "key": "key-scrape", "lanes": []},
]


async def test_metrics_need_a_key_that_sees_every_lane(sim, http, tmp_path: Path) -> None:
    """Keys configured: a key for all lanes or a call-nothing key scrapes; a partial key may not."""
    keyed = settings(sim, ["chat", "ocr"], keys=KEYS)
    with serve_app(build_gateway(keyed, {}, tmp_path)) as gw:
        async with http.get(f"{gw.url}/metrics") as response:
            assert response.status == 401
        async with http.get(f"{gw.url}/metrics", headers=bearer("key-chat")) as response:
            assert response.status == 403
        assert await scrape(http, gw.url, **bearer("key-all"))
        assert await scrape(http, gw.url, **bearer("key-scrape"))
        ocr = {"model": "ocr", "document": {"type": "image_url", "image_url": PNG_URL}}
        status, _, answer = await post(http, f"{gw.v1}/ocr", ocr, **bearer("key-chat"))
        assert status == 403 and answer["error"]["code"] == "permission_denied"
        status, _, _ = await post(http, f"{gw.v1}/ocr", ocr, **bearer("key-scrape"))
        assert status == 403
        assert (await post(http, f"{gw.v1}/ocr", ocr, **bearer("key-all")))[0] == 200


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
