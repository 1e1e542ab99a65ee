"""``POST /v1/messages/count_tokens``, as Anthropic's API answers it: ``{"input_tokens": N}``.

Claude Code and the Anthropic SDK ask it before a call. The count comes from
the lane's first Anthropic source that answers it (the body passed on with
that source's model; ``X-Laneway-Token-Count: source NAME``). A lane with no
such source, or none answering, gets laneway's own estimate, marked as one:
``X-Laneway-Token-Count: estimate`` and ``"laneway_estimate": true`` beside
``input_tokens``. The estimate is ``laneway.core.messages.estimate_tokens``
(a token per four characters) over the text of the messages, the system
prompt and the tool definitions: a guess, never what a model would bill.
"""

from __future__ import annotations

from typing import Any

import orjson

from laneway.core.errors import RequestInvalid
from laneway.core.messages import estimate_tokens, message_texts
from laneway.engine.gateway import Engine
from laneway.engine.token_count import upstream_count
from laneway.server.asgi import Reply
from laneway.wire.anthropic.request_reader import read_messages

_COUNT_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "cache_control",
    }
)
"""What Anthropic's count_tokens takes that laneway reads; another field is a 400 naming it."""
HEADER = b"x-laneway-token-count"


async def count_tokens(engine: Engine, lane_name: str, data: dict[str, Any]) -> Reply:
    """The count of ``data``'s input tokens on ``lane_name``: a source's, else an estimate."""
    for name in data:
        if name not in _COUNT_FIELDS:
            raise RequestInvalid(name, "is not a count_tokens field")
    estimate = _estimate(data)
    counted = await upstream_count(
        engine.lane(lane_name, "chat"), engine.transport, engine.clock, data
    )
    if counted is not None:
        tokens, source = counted
        marked = [(HEADER, b"source " + source.encode())]
        return Reply(200, orjson.dumps({"input_tokens": tokens}), marked)
    body = orjson.dumps({"input_tokens": estimate, "laneway_estimate": True})
    return Reply(200, body, [(HEADER, b"estimate")])


def _estimate(data: dict[str, Any]) -> int:
    """laneway's estimate; the body is checked as a Messages API body first (400 naming a field)."""
    request = read_messages({**data, "max_tokens": 1}, {})
    tools = orjson.dumps(data["tools"]).decode() if data.get("tools") else ""
    return estimate_tokens(*message_texts(request.messages), tools)
