"""Embeddings through the engine: order, pinned dimensions, unknown usage."""

from __future__ import annotations

import pytest

from laneway import Laneway
from laneway.errors import DimensionMismatch, RequestInvalid
from tests.helpers import one_lane, unique_spec


async def test_vectors_in_input_order_with_pinned_length(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), kind="embed", dimensions=16)
    async with Laneway.from_settings(config, environ={}) as lw:
        response = await lw.embed("lane", ["a", "b", "c"])
    assert [len(v) for v in response.vectors] == [16, 16, 16]
    assert response.usage.prompt_tokens is not None


async def test_dimension_mismatch_is_an_error_never_a_vector(sim) -> None:
    config = one_lane(sim, unique_spec("dims=12"), kind="embed", dimensions=16)
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(DimensionMismatch, match="length 12, expected 16"):
            await lw.embed("lane", ["a"])


async def test_missing_embedding_usage_is_unknown(sim) -> None:
    config = one_lane(sim, unique_spec("nousage"), kind="embed")
    async with Laneway.from_settings(config, environ={}) as lw:
        response = await lw.embed("lane", "text")
    assert response.usage.prompt_tokens is None
    assert response.usage.source == "none"


async def test_caller_cannot_override_a_pinned_dimension(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), kind="embed", dimensions=16)
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(RequestInvalid, match="dimensions"):
            await lw.embed("lane", ["a"], dimensions=8)


async def test_encoded_vectors_are_refused_not_garbled(sim) -> None:
    config = one_lane(sim, unique_spec("ok"), kind="embed", dimensions=16)
    async with Laneway.from_settings(config, environ={}) as lw:
        with pytest.raises(RequestInvalid, match="encoding_format"):
            await lw.embed("lane", ["a"], encoding_format="base64")
