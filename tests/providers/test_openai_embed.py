"""Reading OpenAI embeddings answers without decoding the vectors a relay passes on."""

from __future__ import annotations

import base64
import struct

import orjson
import pytest

from laneway.core.errors import AttemptFailure
from laneway.core.vectors import EncodedVector, base64_length, encoded, floats
from laneway.wire.openai.embeddings import answer_vectors


def answer(*embeddings: object, **extra: object) -> dict[str, object]:
    data = [
        {"object": "embedding", "index": index, "embedding": value}
        for index, value in enumerate(embeddings)
    ]
    return {"object": "list", "data": data, "model": "m", **extra}


def packed(values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def test_float_arrays_are_cut_out_counted_and_relayed_as_sent() -> None:
    body = orjson.dumps(answer([0], [], usage={"prompt_tokens": 2})).replace(
        b"[0]", b"[0.5,-1e-05,3]"
    )
    data, vectors = answer_vectors(body, "float")
    assert vectors == [
        EncodedVector("float", b"[0.5,-1e-05,3]", 3),
        EncodedVector("float", b"[]", 0),
    ]
    assert data["usage"] == {"prompt_tokens": 2} and data["model"] == "m"


def test_pretty_printed_arrays_lose_their_whitespace_only() -> None:
    body = orjson.dumps(answer([0.25, -2.0], [1.5]), option=orjson.OPT_INDENT_2)
    _, vectors = answer_vectors(body, "float")
    assert [(v.text, v.length) for v in vectors if isinstance(v, EncodedVector)] == [
        (b"[0.25,-2.0]", 2),
        (b"[1.5]", 1),
    ]


def test_items_out_of_order_come_back_in_index_order() -> None:
    body = orjson.dumps(
        {"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0, 1.0]}]}
    )
    _, vectors = answer_vectors(body, "float")
    assert [floats(v) for v in vectors] == [[1.0, 1.0], [2.0]]


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"index": 0, "embedding": ["a,b", 1.0]}]},  # commas inside a string
        {"data": [{"index": 0, "embedding": [[1.0, 2.0], [3.0]]}]},  # nested arrays
        {"data": [{"index": 0, "embedding": [1.0]}], "embedding": [9.0, 9.0]},  # a stray key
    ],
)
def test_anything_but_plain_arrays_is_parsed_whole_and_counted_right(body) -> None:
    _, vectors = answer_vectors(orjson.dumps(body), "float")
    assert vectors == [body["data"][0]["embedding"]]


def test_base64_strings_are_kept_with_their_float_count() -> None:
    text = packed([1.0, 2.0, 3.0])
    _, vectors = answer_vectors(orjson.dumps(answer(text)), "base64")
    assert vectors == [EncodedVector("base64", text, 3)]
    assert floats(vectors[0]) == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("text", ["AAAA", "AAAA$AAA", "AAAAAAA=", "AAAAA"])
def test_base64_that_is_not_whole_float32s_is_malformed(text) -> None:
    with pytest.raises(AttemptFailure, match="not base64 of little-endian float32s"):
        answer_vectors(orjson.dumps(answer(text)), "base64")


def test_base64_length_counts_every_padding() -> None:
    for size in range(0, 9):
        assert base64_length(packed([0.5] * size)) == size


def test_floats_asked_as_base64_are_packed_once_and_back() -> None:
    _, vectors = answer_vectors(orjson.dumps(answer([0.5, -0.25])), "base64")
    assert vectors == [[0.5, -0.25]]
    assert encoded(vectors[0], "base64") == EncodedVector("base64", packed([0.5, -0.25]), 2)
    assert floats(encoded(vectors[0], "float")) == [0.5, -0.25]
