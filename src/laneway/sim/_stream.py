"""Script a streamed chat answer as steps: bytes to send, pauses, holds, and an abrupt cut.

The script is a pure generator of data, so every streaming fault
(`ttfb`, `delay`, `malformed`, `cut_after`, `stall_after`, `hold_after`,
`nodone`, `end_without_done`) is a choice of steps here and the app's
sender stays a small loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Generator, Iterator

    from laneway.sim._answers import Completion
    from laneway.sim._spec import Behaviour

HANG_SECONDS = 3600.0
"""How long `stall_after` and `nodone` stay silent, unless the client leaves first."""

MALFORMED_EVENT = b"data: {not json\n\n"
DONE_EVENT = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class Pause:
    """Stay silent for `seconds`; the stream ends early if the client disconnects."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Cut:
    """End the body without its final chunk, so the client sees a truncated stream."""


@dataclass(frozen=True, slots=True)
class Hold:
    """Stay silent until the test releases the spec (`POST /_release`) or the client leaves."""


Step = bytes | Pause | Hold | Cut


def _event(completion: Completion, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    chunk = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
        "choices": choices,
        **extra,
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def _delta(
    completion: Completion, delta: dict[str, Any], finish_reason: str | None = None
) -> bytes:
    return _event(completion, [{"index": 0, "delta": delta, "finish_reason": finish_reason}])


def _paced(behaviour: Behaviour, event: bytes) -> Iterator[Step]:
    if behaviour.delay:
        yield Pause(behaviour.delay)
    yield event


def _opening(behaviour: Behaviour, completion: Completion) -> Iterator[Step]:
    if behaviour.ttfb:
        yield Pause(behaviour.ttfb)
    yield _delta(completion, {"role": "assistant", "content": ""})
    for piece in completion.reasoning_pieces:
        yield from _paced(behaviour, _delta(completion, {"reasoning_content": piece}))


def _content(behaviour: Behaviour, completion: Completion) -> Generator[Step, None, bool]:
    """Yield content deltas with their injected faults; return whether the stream broke off."""
    for sent in range(len(completion.pieces) + 1):
        if sent:
            piece = completion.pieces[sent - 1]
            yield from _paced(behaviour, _delta(completion, {"content": piece}))
        if behaviour.malformed == sent:
            yield MALFORMED_EVENT
        if behaviour.cut_after == sent:
            yield Cut()
            return True
        if behaviour.stall_after == sent:
            yield Pause(HANG_SECONDS)
            yield Cut()
            return True
        if behaviour.hold_after == sent:
            yield Hold()
    return False


def _tool_calls(behaviour: Behaviour, completion: Completion) -> Iterator[Step]:
    """Each call as OpenAI streams it: id and name first, then the arguments in two halves."""
    for index, call in enumerate(completion.tool_calls):
        opening = {"index": index, "id": call.id, "type": "function"}
        opening["function"] = {"name": call.name, "arguments": ""}
        yield from _paced(behaviour, _delta(completion, {"tool_calls": [opening]}))
        half = len(call.arguments) // 2
        for fragment in (call.arguments[:half], call.arguments[half:]):
            more = {"index": index, "function": {"arguments": fragment}}
            yield from _paced(behaviour, _delta(completion, {"tool_calls": [more]}))


def _closing(behaviour: Behaviour, completion: Completion, include_usage: bool) -> Iterator[Step]:
    yield from _tool_calls(behaviour, completion)
    yield from _paced(behaviour, _delta(completion, {}, completion.finish_reason))
    if include_usage and completion.with_usage:
        yield _event(completion, [], usage=completion.usage())
    if behaviour.nodone:
        yield Pause(HANG_SECONDS)
    elif not behaviour.end_without_done:
        yield DONE_EVENT


def stream_steps(
    behaviour: Behaviour, completion: Completion, include_usage: bool
) -> Iterator[Step]:
    """Script the SSE body of `completion`, faults included, lazily as it is sent.

    Fault positions count content chunks: `cut_after=0` cuts before the first
    content delta, and a position past the last chunk never fires.
    """
    yield from _opening(behaviour, completion)
    broke_off = yield from _content(behaviour, completion)
    if not broke_off:
        yield from _closing(behaviour, completion, include_usage)
