"""The per-item embedding cache: re-embedding a corpus sends only what changed.

Each vector is stored under a key derived from the lane, the models of its
sources, the requested dimensions and the SHA-256 of the text, so a vector
is only ever reused for the same text, model and length; changing a lane's
model or pin changes every key, which retires the old entries instead of
serving vectors from another embedding space. Vectors are stored as
little-endian float64 bytes, the exact value the upstream's JSON decoded to;
one fetched as base64 (a relay's) is its float32 values widened exactly, so
an entry serves callers of either encoding.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

import orjson

from laneway.cache.port import CacheStore
from laneway.core.types import EmbedInput
from laneway.engine.lane import Lane

Vector = list[float]


class EmbeddingCache:
    """Per-item vectors of every lane with ``embed_cache`` on, in one store."""

    def __init__(self, store: CacheStore) -> None:
        self.store = store

    async def lookup(
        self, lane: Lane, dimensions: int | None, texts: Sequence[EmbedInput]
    ) -> list[Vector | None]:
        """The cached vector of each text, in order (``None`` where there is none)."""
        keys = [item_key(lane, dimensions, text) for text in texts]
        values = await self.store.get_many(keys)
        return [decode_vector(value, dimensions) for value in values]

    async def save(
        self,
        lane: Lane,
        dimensions: int | None,
        texts: Sequence[EmbedInput],
        vectors: Sequence[Vector],
    ) -> None:
        """Keep the vectors an upstream just returned (they passed every check)."""
        items = {
            item_key(lane, dimensions, text): encode_vector(vector)
            for text, vector in zip(texts, vectors, strict=True)
        }
        await self.store.put_many(items, None)


def item_key(lane: Lane, dimensions: int | None, item: EmbedInput) -> str:
    """``emb:<lane>:<digest>``; the lane prefix lets an operator drop one lane's entries.

    A token array is keyed apart from every text (``tokens:`` never starts a hex digest).
    """
    models = [source.config.model for source in lane.sources]
    if isinstance(item, str):
        text_hash = hashlib.sha256(item.encode()).hexdigest()
    else:
        text_hash = "tokens:" + hashlib.sha256(orjson.dumps(item)).hexdigest()
    identity = orjson.dumps([lane.name, models, dimensions, text_hash])
    return f"emb:{lane.name}:{hashlib.sha256(identity).hexdigest()}"


def encode_vector(vector: Sequence[float]) -> bytes:
    """The vector as little-endian float64s."""
    return struct.pack(f"<{len(vector)}d", *vector)


def decode_vector(value: bytes | None, dimensions: int | None) -> Vector | None:
    """The stored vector, or ``None`` when absent or not of the pinned length."""
    if value is None or not value or len(value) % 8:
        return None
    vector = list(struct.unpack(f"<{len(value) // 8}d", value))
    if dimensions is not None and len(vector) != dimensions:
        return None
    return vector
