"""Mistral's ``/v1/ocr`` shapes, for the gateway's ``POST /v1/ocr``: pure, no I/O.

Clients written for Mistral's OCR API send ``{"model", "document"}`` and
read ``{"pages": [{"index", "markdown"}], "model", "usage_info"}``; the
``model`` names a laneway OCR lane. Only ``data:`` URLs are taken: the
gateway never fetches a caller-named URL (that would let callers make it
reach any host). A document is one image or one PDF page, read whole, so
the answer always has one page.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from laneway.core.errors import RequestInvalid
from laneway.core.types import OCRResponse

DOCUMENT_FIELDS = {"image_url": "image_url", "document_url": "document_url"}
"""Each Mistral document ``type`` and the field holding its URL."""


@dataclass(frozen=True, slots=True)
class OCRCall:
    """A validated ``/v1/ocr`` request: the lane, the document's bytes and type."""

    lane: str
    document: bytes
    mime_type: str | None


def parse_ocr_request(body: Mapping[str, Any]) -> OCRCall:
    """Read a Mistral-shaped OCR body; errors name the offending field."""
    lane = body.get("model")
    if not isinstance(lane, str) or not lane:
        raise RequestInvalid("model", "must name an OCR lane")
    pages = body.get("pages")
    if pages is not None and pages != [0]:
        raise RequestInvalid("pages", "laneway reads one page per request; send [0] or omit it")
    document = body.get("document")
    if not isinstance(document, dict):
        raise RequestInvalid("document", "must be an object with a type")
    kind = document.get("type")
    field = DOCUMENT_FIELDS.get(kind) if isinstance(kind, str) else None
    if field is None:
        raise RequestInvalid("document.type", "must be 'image_url' or 'document_url'")
    url = document.get(field)
    if isinstance(url, dict):
        url = url.get("url")
    mime_type, data = parse_data_url(url, f"document.{field}")
    return OCRCall(lane, data, mime_type)


def parse_data_url(url: object, field: str) -> tuple[str | None, bytes]:
    """The media type (``None`` if absent) and bytes of a base64 ``data:`` URL."""
    if not isinstance(url, str) or not url.startswith("data:"):
        raise RequestInvalid(field, "must be a data: URL (laneway does not fetch remote documents)")
    header, comma, payload = url[5:].partition(",")
    if not comma or not header.endswith(";base64"):
        raise RequestInvalid(field, "must be a base64 data: URL (data:<type>;base64,...)")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RequestInvalid(field, "is not valid base64") from exc
    return header.split(";")[0] or None, data


def ocr_response_body(response: OCRResponse, document_bytes: int) -> dict[str, Any]:
    """The Mistral-shaped answer; token usage rides along (unknown figures stay null)."""
    usage = response.usage
    return {
        "pages": [{"index": 0, "markdown": response.text, "images": [], "dimensions": None}],
        "model": response.model,
        "document_annotation": None,
        "usage_info": {"pages_processed": 1, "doc_size_bytes": document_bytes},
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }
