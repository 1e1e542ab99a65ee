"""Native wire formats (Gemini, Anthropic) over the OpenAI-shaped sim.

A native request is read into the OpenAI-shaped request the planners and
fault choosers already understand (a `Call`), and its answer is written back
in the native form. Streams re-encode the OpenAI stream script event by event,
so every streaming fault (`ttfb`, `delay`, `malformed`, `cut_after`,
`stall_after`, `hold_after`, `nodone`) behaves the same in every wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from laneway.sim._answers import Reply, error_reply
from laneway.sim._stream import DONE_EVENT, MALFORMED_EVENT, stream_steps

if TYPE_CHECKING:
    from collections.abc import Iterator

    from laneway.sim._answers import Completion, Headers
    from laneway.sim._cache import Prefix
    from laneway.sim._faults import Refusal
    from laneway.sim._request import Request
    from laneway.sim._spec import Behaviour
    from laneway.sim._stream import Step


@dataclass(frozen=True, slots=True)
class Call:
    """A native request understood: chat or embed, as an OpenAI-shaped request."""

    kind: str
    """`chat` or `embed`."""
    request: Request
    stream: bool = False
    cache_prefix: Prefix | None = None
    """The prefix the request marks for caching (Anthropic's `cache_control`)."""
    implicit_cache: bool = True
    """Whether a repeated prefix is read from the cache unmarked (not on Anthropic)."""


class StreamWriter(Protocol):
    """Writes one streamed answer's native events (it may keep state, e.g. open blocks)."""

    def choice(self, choice: dict[str, Any]) -> Iterator[bytes]:
        """The native events for one OpenAI chunk choice (role, delta or finish)."""
        ...

    def done(self) -> Iterator[bytes]:
        """The native events standing for OpenAI's `[DONE]`."""
        ...


class Dialect(Protocol):
    """One native wire format: how to read its requests and write its answers."""

    def understand(self, method: str, endpoint: str, body: Request | None) -> Call | Reply:
        """The call a request makes, or the native error answer refusing it."""
        ...

    def chat(self, completion: Completion) -> Reply:
        """The non-streamed answer."""
        ...

    def writer(self, completion: Completion) -> StreamWriter:
        """A writer for the streamed answer."""
        ...

    def embed(self, behaviour: Behaviour, request: Request) -> Reply:
        """The embeddings answer for an OpenAI-shaped embeddings request."""
        ...

    def error(self, status: int, message: str, code: str | None, headers: Headers) -> Reply:
        """A native error answer; `code` is the sim's OpenAI error code, if any."""
        ...


def native_steps(
    behaviour: Behaviour, completion: Completion, writer: StreamWriter
) -> Iterator[Step]:
    """The OpenAI stream script of `completion`, re-encoded by `writer`.

    Pauses, holds, cuts and the malformed event pass through unchanged; the usage chunk
    is not asked for, since native writers report usage from `completion`.
    """
    for step in stream_steps(behaviour, completion, include_usage=False):
        if not isinstance(step, bytes) or step == MALFORMED_EVENT:
            yield step
        elif step == DONE_EVENT:
            yield from writer.done()
        else:
            choices = orjson.loads(step.removeprefix(b"data: "))["choices"]
            if choices:
                yield from writer.choice(choices[0])


def native_refusal(
    dialect: Dialect, behaviour: Behaviour, refusal: Refusal, wall_now: float
) -> Reply:
    """The refusal with the OpenAI route's status and retry headers, in the native body."""
    generic = error_reply(behaviour, refusal, wall_now)
    headers = [h for h in generic.headers if h[0] != b"content-type"]
    return dialect.error(refusal.status, refusal.message, refusal.code, headers)


def sse(payload: object, event: str | None = None, end: bytes = b"\n\n") -> bytes:
    """One server-sent event: an optional `event:` line, then the JSON `data:` line."""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + orjson.dumps(payload) + end
