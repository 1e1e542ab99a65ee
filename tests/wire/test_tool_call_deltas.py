"""Every stream reader marks a tool call's delta on the chunk, so the engine reads no ``raw``."""

from __future__ import annotations

import orjson

from laneway.wire.anthropic.events import MessagesEventReader
from laneway.wire.gemini.answer import GenerateEventReader
from laneway.wire.openai.chat_answer import read_completion_chunk


def test_openai_chunks_mark_their_tool_call_deltas() -> None:
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
    marked = read_completion_chunk(orjson.dumps({"choices": [{"delta": {"tool_calls": [call]}}]}))
    plain = read_completion_chunk(orjson.dumps({"choices": [{"delta": {"content": "hi"}}]}))
    assert marked is not None and marked.tool_call_delta
    assert plain is not None and not plain.tool_call_delta


def test_anthropic_tool_use_blocks_and_their_input_are_marked() -> None:
    reader = MessagesEventReader("m")
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    events = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "a"}},
        {"type": "content_block_start", "index": 1, "content_block": block},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
    ]
    marks = [
        chunk.tool_call_delta for e in events if (chunk := reader.parse_event(orjson.dumps(e)))
    ]
    assert marks == [False, True, True]


def test_gemini_function_calls_are_marked() -> None:
    part = {"functionCall": {"name": "f", "args": {"a": 1}}}
    event = {"candidates": [{"content": {"parts": [part]}, "index": 0}]}
    chunk = GenerateEventReader("g").parse_event(orjson.dumps(event))
    text = GenerateEventReader("g").parse_event(
        orjson.dumps({"candidates": [{"content": {"parts": [{"text": "hi"}]}}]})
    )
    assert chunk is not None and chunk.tool_call_delta
    assert text is not None and not text.tool_call_delta
