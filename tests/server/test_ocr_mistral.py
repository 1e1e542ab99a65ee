"""Mistral's ``/v1/ocr`` shapes: requests read (errors name the field), answers shaped."""

from __future__ import annotations

import base64

import pytest

from laneway.core.types import OCRResponse, Usage
from laneway.errors import RequestInvalid
from laneway.wire.mistral_ocr import ocr_response_body, parse_ocr_request

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_mistral_requests_are_read_and_answers_shaped() -> None:
    url = f"data:image/png;base64,{base64.b64encode(PNG).decode()}"
    call = parse_ocr_request({"model": "ocr", "document": {"type": "image_url", "image_url": url}})
    assert (call.lane, call.document, call.mime_type) == ("ocr", PNG, "image/png")
    nested = {"type": "document_url", "document_url": {"url": url}}
    assert parse_ocr_request({"model": "ocr", "document": nested}).document == PNG
    response = OCRResponse("ocr", "s", "vision-1", "# Title", Usage(5, None, None), (), 0.1)
    assert ocr_response_body(response, len(PNG)) == {
        "pages": [{"index": 0, "markdown": "# Title", "images": [], "dimensions": None}],
        "model": "vision-1",
        "document_annotation": None,
        "usage_info": {"pages_processed": 1, "doc_size_bytes": len(PNG)},
        "usage": {"prompt_tokens": 5, "completion_tokens": None, "total_tokens": None},
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"document": {"type": "image_url", "image_url": "data:,x"}}, "model"),
        ({"model": "o"}, "document"),
        ({"model": "o", "document": {"type": "file"}}, "document.type"),
        (
            {"model": "o", "document": {"type": "document_url", "document_url": "https://x/a.pdf"}},
            "document.document_url",
        ),
        (
            {"model": "o", "document": {"type": "image_url", "image_url": "data:image/png,x"}},
            "image",
        ),
        (
            {"model": "o", "document": {"type": "image_url", "image_url": "data:a;base64,!!"}},
            "document.image_url",
        ),
        ({"model": "o", "pages": [0, 1], "document": {}}, "pages"),
    ],
)
def test_bad_mistral_requests_name_the_field(body, field) -> None:
    with pytest.raises(RequestInvalid, match=field):
        parse_ocr_request(body)
