"""Which network reads of an OpenAI chat stream a relay may pass on without reading them.

A caller of ``/v1/chat/completions`` on an OpenAI-compatible source is sent
the upstream's events as they came, a network read in one piece. Most events
are one more piece of text, which nothing needs until a cut (a continuation's
prefill, an estimate of what a broken answer used): they stay bytes. The few
the gateway must read now are found by a few byte counts per read (and a
regular expression, in a read that holds one) instead of one JSON parse per
event: an event with a finish reason (the answer is complete), a ``usage``
object, an ``error``, and anything that is not a ``data: {...}`` event
followed by a blank line (``[DONE]``, a comment, a malformed event, a line
ending in ``\\r\\n``). The plain events before the first of them go on
unread; from it on, the read is parsed event by event, as every stream is
otherwise.

An event whose braces close but whose JSON inside is broken is not found by
this test: it is passed on as it came, where the parsing path skips it and
counts it as malformed.
"""

from __future__ import annotations

import re

_MUST_READ = re.compile(rb'"(?:finish_reason"\s*:\s*[^n\s]|usage"\s*:\s*[^n\s]|error")')
"""A finish reason or usage that is not ``null``, or an ``error`` (key or value)."""


def plain_prefix(block: bytes) -> int:
    """How many leading bytes of ``block`` (whole lines of one read) a relay may pass on unread.

    They are whole ``data: {...}`` events, each with its blank line, up to
    the first event that holds a finish reason, a usage object or an error;
    ``len(block)`` when there is none. ``0`` when the leading events are not
    all plain events (a comment, ``[DONE]``, a malformed event, ``\r\n``
    line endings): the whole read is then parsed.

    The usual read is judged by counts (every ``finish_reason`` and ``usage``
    ``null``, no ``error``: ``bytes.count`` skips ahead by the needle's
    length), and ``_MUST_READ`` looks for where only in a read that holds
    one (``re`` tries its alternation at every quote mark: about twice the
    instructions a read).
    """
    finishes, usages = block.count(b'"finish_reason"'), block.count(b'"usage"')
    if (
        b'"error"' in block
        or (finishes and finishes != block.count(b'"finish_reason":null'))
        or (usages and usages != block.count(b'"usage":null'))
    ):
        found = _MUST_READ.search(block)
        end = len(block) if found is None else block.rfind(b"\n\n", 0, found.start()) + 2
        if end < 2:
            return 0
    else:
        end = len(block)
    if not (block.startswith(b"data: {") and block.endswith(b"}\n\n", 0, end)):
        return 0
    events = block.count(b"}\n\ndata: {", 0, end) + 1
    return end if block.count(b"\n", 0, end) == 2 * events else 0
