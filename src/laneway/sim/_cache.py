"""A prompt cache for the sim: repeated prompt prefixes are reported as cache reads.

OpenAI, Azure and Gemini cache implicitly: a request whose messages before
the last repeat an earlier request's, `MIN_CACHED_TOKENS` or more, reads
those tokens from the cache (writes are free and not reported). Anthropic
caches what the request marks: the prefix up to its last `cache_control`
block is written the first time and read after. The sim remembers the last
`SIZE` prefixes it saw, each per behaviour spec (one upstream's cache is its own).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

MIN_CACHED_TOKENS = 1024
SIZE = 4096


@dataclass(frozen=True, slots=True)
class Prefix:
    """A cacheable prompt prefix: its text (for the key) and its token count."""

    text: str
    tokens: int
    explicit: bool
    """Marked by the caller (Anthropic's `cache_control`): its first use is a reported write."""


class PromptCache:
    """The prefixes seen lately; `use` says what a request reads from or writes to it."""

    def __init__(self) -> None:
        self._seen: OrderedDict[bytes, None] = OrderedDict()

    def use(self, scope: int, prefix: Prefix | None) -> tuple[int, int]:
        """`(read, written)` tokens for a request with `prefix` to upstream `scope` (an id)."""
        if prefix is None or prefix.tokens < MIN_CACHED_TOKENS:
            return 0, 0
        key = hashlib.blake2b(f"{scope}\x1f{prefix.text}".encode(), digest_size=16).digest()
        if key in self._seen:
            self._seen.move_to_end(key)
            return prefix.tokens, 0
        self._seen[key] = None
        if len(self._seen) > SIZE:
            self._seen.popitem(last=False)
        return 0, prefix.tokens if prefix.explicit else 0
