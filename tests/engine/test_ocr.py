"""OCR lanes: a document in as a data URL content part, text and usage out."""

from __future__ import annotations

import base64

import pytest
from pydantic import ValidationError

from laneway import Laneway
from laneway.config.models import LanewayConfig
from laneway.core.records import CallRecord
from laneway.engine.ocr import DEFAULT_PROMPT, document_type
from laneway.errors import RequestInvalid
from tests.engine.spy import SpyTransport
from tests.helpers import one_lane, unique_spec

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
PDF_PAGE = b"%PDF-1.7\n" + b"\x00" * 32


class Collect:
    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


async def test_an_image_is_read_into_text_with_usage(sim) -> None:
    spy, sink = SpyTransport(), Collect()
    config = one_lane(sim, unique_spec("chunks=3"), kind="ocr", prompt="Read it.")
    async with Laneway.from_settings(config, environ={}, transport=spy, observers=[sink]) as lw:
        result = await lw.ocr("lane", PNG)
    assert result.text == "sim answer w2"
    assert result.usage.completion_tokens == 3 and result.usage.source == "provider"
    assert result.source == "openai:sim-model" and len(result.attempts) == 1
    (body,) = spy.bodies
    text, image = body["messages"][0]["content"]
    assert text == {"type": "text", "text": "Read it."}
    url = f"data:image/png;base64,{base64.b64encode(PNG).decode()}"
    assert image == {"type": "image_url", "image_url": {"url": url}}
    assert [(r.kind, r.outcome) for r in sink.records] == [("ocr", "ok")]


async def test_a_pdf_page_goes_as_a_file_part_with_the_default_prompt(sim) -> None:
    spy = SpyTransport()
    config = one_lane(sim, unique_spec("ok"), kind="ocr")
    async with Laneway.from_settings(config, environ={}, transport=spy) as lw:
        await lw.ocr("lane", PDF_PAGE, mime_type="application/pdf")
    text, part = spy.bodies[0]["messages"][0]["content"]
    assert text["text"] == DEFAULT_PROMPT
    assert part["type"] == "file" and part["file"]["file_data"].startswith(
        "data:application/pdf;base64,JVBERi0x"
    )


async def test_an_ocr_lane_is_not_a_chat_lane(sim) -> None:
    async with Laneway.from_settings(one_lane(sim, "ok"), environ={}) as lw:
        with pytest.raises(RequestInvalid, match="is of kind chat, not ocr"):
            await lw.ocr("lane", PNG)
    ocr_config = one_lane(sim, "ok", kind="ocr")
    async with Laneway.from_settings(ocr_config, environ={}) as lw:
        with pytest.raises(RequestInvalid, match="is of kind ocr, not chat"):
            await lw.chat("lane", [{"role": "user", "content": "hi"}])


def test_the_type_is_sniffed_or_checked() -> None:
    assert document_type(PNG, None) == "image/png"
    assert document_type(b"\xff\xd8\xff\xe0", None) == "image/jpeg"
    assert document_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ", None) == "image/webp"
    assert document_type(PNG, "IMAGE/PNG; q=1") == "image/png"
    with pytest.raises(RequestInvalid, match="mime_type: 'text/plain' is not one of"):
        document_type(b"hello", "text/plain")
    with pytest.raises(RequestInvalid, match="mime_type: not given"):
        document_type(b"hello", None)


def test_prompt_belongs_to_ocr_lanes() -> None:
    source = {"base_url": "http://x/v1", "model": "m"}
    with pytest.raises(ValidationError, match="prompt applies to ocr lanes only"):
        LanewayConfig.model_validate({"lanes": {"c": {"prompt": "Read", "sources": [source]}}})
    with pytest.raises(ValidationError, match="idle_timeout applies to chat lanes only"):
        LanewayConfig.model_validate(
            {"lanes": {"o": {"kind": "ocr", "idle_timeout": 3, "sources": [source]}}}
        )
