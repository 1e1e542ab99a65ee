"""OCR on ``kind: ocr`` lanes: a vision-capable chat model reads one image or page.

There is no OCR wire protocol to speak: an OCR lane is a chat lane whose
request laneway builds itself, the lane's ``prompt`` as text and the
document as a base64 ``data:`` URL content part (OpenAI's ``image_url`` for
images, its ``file`` part for a PDF). The call runs through the same call
loop, recording and response cache as any chat call, so retries, deadline,
usage and telemetry behave identically (``Engine.ocr``).
"""

from __future__ import annotations

import base64

from laneway.core.errors import RequestInvalid
from laneway.core.messages import ContentPart
from laneway.core.types import ChatRequest

DEFAULT_PROMPT = (
    "Transcribe all text in this document as Markdown, in reading order. "
    "Keep tables as Markdown tables. Output only the transcription."
)
SAMPLE_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
"""A valid one-pixel PNG: what a probe or a measurement sends to an OCR lane."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
PDF = "application/pdf"
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", PDF),
)


def ocr_request(prompt: str, document: bytes, mime_type: str | None) -> ChatRequest:
    """The chat request asking a vision model to read ``document``."""
    if not document:
        raise RequestInvalid("document", "is empty")
    kind = document_type(document, mime_type)
    url = f"data:{kind};base64,{base64.b64encode(document).decode()}"
    part: ContentPart
    if kind == PDF:
        part = {"type": "file", "file": {"filename": "page.pdf", "file_data": url}}
    else:
        part = {"type": "image_url", "image_url": {"url": url}}
    return ChatRequest([{"role": "user", "content": [{"type": "text", "text": prompt}, part]}])


def document_type(document: bytes, mime_type: str | None) -> str:
    """``mime_type`` when it is one laneway sends, else the type the bytes start with."""
    if mime_type is not None:
        kind = mime_type.split(";")[0].strip().lower()
        if kind not in IMAGE_TYPES and kind != PDF:
            allowed = ", ".join(sorted(IMAGE_TYPES | {PDF}))
            raise RequestInvalid("mime_type", f"{mime_type!r} is not one of {allowed}")
        return kind
    for magic, kind in _MAGIC:
        if document.startswith(magic):
            return kind
    if document[:4] == b"RIFF" and document[8:12] == b"WEBP":
        return "image/webp"
    raise RequestInvalid("mime_type", "not given, and the bytes are no PNG, JPEG, GIF, WebP or PDF")
