"""A caller's OpenAI body relayed to a source: only the model rewritten, never a stale body."""

from __future__ import annotations

import dataclasses

import orjson

from laneway.wire.openai.chat_request import chat_call, chat_request_body, relayed_request_body

BODY = b'{"model": "lane", "messages": [{"role": "user", "content": "hi"}], "top_p": 1}'


def test_the_body_goes_as_it_came_with_the_sources_model() -> None:
    request = chat_call(orjson.loads(BODY), {}, BODY).request
    assert relayed_request_body(request, "gpt-x") == BODY.replace(b'"lane"', b'"gpt-x"')


def test_a_request_derived_from_it_is_written_afresh() -> None:
    request = chat_call(orjson.loads(BODY), {}, BODY).request
    asked_again = dataclasses.replace(request, messages=[*request.messages])
    assert relayed_request_body(asked_again, "gpt-x") is None
    more_params = dataclasses.replace(request, params={**request.params, "seed": 1})
    assert relayed_request_body(more_params, "gpt-x") is None
    other_headers = dataclasses.replace(request, headers={"x-request-id": "r"})
    assert relayed_request_body(other_headers, "gpt-x") == BODY.replace(b'"lane"', b'"gpt-x"')


def test_a_model_written_with_escapes_is_rewritten_whole() -> None:
    body = b'{"model":"la\\u006ee","messages":[{"role":"user","content":"hi"}]}'
    request = chat_call(orjson.loads(body), {}, body).request
    assert (
        relayed_request_body(request, "m")
        == b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    )


def test_without_the_callers_body_there_is_nothing_to_relay() -> None:
    request = chat_call(orjson.loads(BODY), {}).request
    assert relayed_request_body(request, "gpt-x") is None
    written = orjson.loads(chat_request_body(request, "gpt-x", stream=False))
    assert written == {**orjson.loads(BODY), "model": "gpt-x"}
