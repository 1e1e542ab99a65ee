"""The provider x feature matrix: each cell is a request through ``laneway serve``.

For every provider (one lane each, its single source at the simulator's
native endpoint) and every feature, the official OpenAI SDK (chat
completions) and the official Anthropic SDK (``/v1/messages``) send the
request and check the answer. A cell reads ``yes`` when every client that
can express the feature got a correct answer, ``400 field`` when the
gateway refused it before any attempt naming that field (the source's wire
format cannot carry it), and names the client when the two differ. Anything
else (a wrong answer, a 5xx) fails the test.

``tests/server/test_provider_matrix.py`` checks the README's table against
these outcomes; ``uv run python -m tests.server.provider_matrix`` rewrites it.
"""

from __future__ import annotations

import base64
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
from anthropic import Anthropic
from openai import OpenAI

from laneway.app.composer import build_gateway
from laneway.config.models import LanewayConfig
from laneway.sim import RunningSim, start_in_thread
from tests.helpers import unique_spec
from tests.providers.support import ANTHROPIC, AZURE, GEMINI, OPENAI, Wire, source
from tests.server.support import serve_app

README = Path(__file__).parents[2] / "README.md"
START = "<!-- provider-matrix: written by `uv run python -m tests.server.provider_matrix` -->"
END = "<!-- /provider-matrix -->"
PROVIDERS: list[Wire] = [OPENAI, AZURE, GEMINI, ANTHROPIC]
QUESTION = "What is the weather in Paris?"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(64)).decode()
IMAGE_TOKENS = 258
"""What the sim counts per image: a prompt this large shows the image arrived."""
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
OPENAI_TOOL: Any = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": PARAMETERS},
}
ANTHROPIC_TOOL = {"name": "get_weather", "input_schema": PARAMETERS}

Check = Callable[[Any, str], None]
"""Sends one feature's request with one SDK to a lane, and asserts the answer is right."""


@dataclass(frozen=True)
class Feature:
    """One row: a check per SDK, ``None`` where that SDK cannot express the feature."""

    name: str
    openai: Check | None
    anthropic: Check | None


def _user(content: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": content}]


def _chat(sdk: OpenAI, lane: str, **request: Any) -> Any:
    return sdk.chat.completions.create(model=lane, **request)


def _message(sdk: Anthropic, lane: str, **request: Any) -> Any:
    return sdk.messages.create(model=lane, max_tokens=256, **request)


def _city(arguments: dict[str, Any]) -> None:
    assert isinstance(arguments.get("city"), str), arguments


def openai_tools(sdk: OpenAI, lane: str) -> None:
    answer = _chat(sdk, lane, messages=_user(QUESTION), tools=[OPENAI_TOOL])
    call = answer.choices[0].message.tool_calls[0]
    assert answer.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and call.id
    _city(orjson.loads(call.function.arguments))


def anthropic_tools(sdk: Anthropic, lane: str) -> None:
    message = _message(sdk, lane, messages=_user(QUESTION), tools=[ANTHROPIC_TOOL])
    use = [block for block in message.content if block.type == "tool_use"]
    assert message.stop_reason == "tool_use" and use[0].name == "get_weather" and use[0].id
    _city(use[0].input)


def openai_streamed_tools(sdk: OpenAI, lane: str) -> None:
    stream = _chat(sdk, lane, messages=_user(QUESTION), tools=[OPENAI_TOOL], stream=True)
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in stream:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                call["name"] += (delta.function and delta.function.name) or ""
                call["arguments"] += (delta.function and delta.function.arguments) or ""
    assert finish == "tool_calls" and calls[0]["name"] == "get_weather" and calls[0]["id"]
    _city(orjson.loads(calls[0]["arguments"]))


def anthropic_streamed_tools(sdk: Anthropic, lane: str) -> None:
    request: Any = {"messages": _user(QUESTION), "tools": [ANTHROPIC_TOOL]}
    with sdk.messages.stream(model=lane, max_tokens=256, **request) as stream:
        message = stream.get_final_message()
    use = [block for block in message.content if block.type == "tool_use"]
    assert message.stop_reason == "tool_use" and use[0].name == "get_weather"
    _city(use[0].input)


def openai_images(sdk: OpenAI, lane: str) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    content = [{"type": "text", "text": "What is in this image?"}, image]
    answer = _chat(sdk, lane, messages=_user(content))
    assert answer.choices[0].message.content
    assert answer.usage.prompt_tokens >= IMAGE_TOKENS


def anthropic_images(sdk: Anthropic, lane: str) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": PNG}
    content = [
        {"type": "text", "text": "What is in this image?"},
        {"type": "image", "source": source},
    ]
    message = _message(sdk, lane, messages=_user(content))
    usage = message.usage
    assert message.content[-1].text
    assert usage.input_tokens + (usage.cache_read_input_tokens or 0) >= IMAGE_TOKENS


def _instance(text: str) -> None:
    value = orjson.loads(text)
    assert isinstance(value["name"], str) and isinstance(value["population"], int), value


def openai_json_schema(sdk: OpenAI, lane: str) -> None:
    schema = {"name": "city", "schema": SCHEMA, "strict": True}
    response_format = {"type": "json_schema", "json_schema": schema}
    answer = _chat(sdk, lane, messages=_user("Describe Paris."), response_format=response_format)
    _instance(answer.choices[0].message.content)


def anthropic_json_schema(sdk: Anthropic, lane: str) -> None:
    output = {"format": {"type": "json_schema", "schema": SCHEMA}}
    message = _message(sdk, lane, messages=_user("Describe Paris."), output_config=output)
    _instance("".join(block.text for block in message.content if block.type == "text"))


def openai_stop(sdk: OpenAI, lane: str) -> None:
    answer = _chat(sdk, lane, messages=_user("Say something."), stop=["w3"])
    content = answer.choices[0].message.content
    assert content.startswith("sim answer") and "w3" not in content, content


def anthropic_stop(sdk: Anthropic, lane: str) -> None:
    message = _message(sdk, lane, messages=_user("Say something."), stop_sequences=["w3"])
    text = message.content[-1].text
    assert text.startswith("sim answer") and "w3" not in text, text


def openai_seed(sdk: OpenAI, lane: str) -> None:
    answer = _chat(sdk, lane, messages=_user("Say something."), seed=7)
    assert answer.choices[0].message.content


def openai_system_in_middle(sdk: OpenAI, lane: str) -> None:
    messages = [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "Hi."},
        {"role": "system", "content": "From now on, be brief."},
        {"role": "user", "content": "Say something."},
    ]
    assert _chat(sdk, lane, messages=messages).choices[0].message.content


FEATURES = [
    Feature("tools", openai_tools, anthropic_tools),
    Feature("streamed tools", openai_streamed_tools, anthropic_streamed_tools),
    Feature("images", openai_images, anthropic_images),
    Feature("JSON schema", openai_json_schema, anthropic_json_schema),
    Feature("stop", openai_stop, anthropic_stop),
    Feature("seed", openai_seed, None),
    Feature("system in the middle", openai_system_in_middle, None),
]
"""The rows. The Anthropic SDK has no ``seed`` and takes ``system`` only before the turns."""


@dataclass
class Clients:
    """The two SDKs, pointed at one gateway."""

    openai: OpenAI
    anthropic: Anthropic


def outcome(check: Check, client: Any, lane: str) -> str:
    """``yes``, or ``400 field`` for a refusal naming the field; other failures raise."""
    try:
        check(client, lane)
    except openai.BadRequestError as exc:
        body: Any = exc.body
        return f"400 `{body['param']}`"
    except anthropic.BadRequestError as exc:
        refused: Any = exc.body
        return f"400 `{refused['error']['message'].split(':')[0]}`"
    return "yes"


def cell(feature: Feature, lane: str, clients: Clients) -> str:
    """The table cell of ``feature`` on ``lane``, from every SDK that can express it."""
    results = []
    if feature.openai is not None:
        results.append(("OpenAI SDK", outcome(feature.openai, clients.openai, lane)))
    if feature.anthropic is not None:
        results.append(("Anthropic SDK", outcome(feature.anthropic, clients.anthropic, lane)))
    if len({result for _, result in results}) == 1:
        return results[0][1]
    return "; ".join(f"{client}: {result}" for client, result in results)


def lanes(sim: RunningSim) -> LanewayConfig:
    """One lane per provider, named after it, its one source at the sim's native endpoint."""
    body = {wire.name: {"sources": [source(sim, wire, unique_spec("ok"))]} for wire in PROVIDERS}
    return LanewayConfig.model_validate({"lanes": body, "telemetry": {"url": "none"}})


@contextmanager
def matrix_clients(sim: RunningSim, folder: Path) -> Iterator[Clients]:
    """``laneway serve``'s gateway over ``lanes`` and the two SDKs pointed at it."""
    with (
        serve_app(build_gateway(lanes(sim), {}, folder)) as gw,
        OpenAI(base_url=gw.v1, api_key="unused", max_retries=0) as openai_sdk,
        Anthropic(base_url=gw.url, api_key="unused", max_retries=0) as anthropic_sdk,
    ):
        yield Clients(openai_sdk, anthropic_sdk)


def render(cells: dict[tuple[str, str], str]) -> str:
    """The README table, between its markers."""
    names = [wire.name for wire in PROVIDERS]
    lines = [START, "", "| feature | " + " | ".join(names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    for feature in FEATURES:
        row = [cells[feature.name, name] for name in names]
        lines.append(f"| {feature.name} | " + " | ".join(row) + " |")
    return "\n".join([*lines, "", END])


def readme_cells() -> dict[tuple[str, str], str]:
    """The cells of the README's table, keyed by (feature, provider)."""
    text = README.read_text()
    block = text[text.index(START) : text.index(END)]
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    header = [name.strip() for name in rows[0].strip("|").split("|")][1:]
    cells: dict[tuple[str, str], str] = {}
    for row in rows[1:]:
        feature, *values = (value.strip() for value in row.strip("|").split("|"))
        cells.update({(feature, name): value for name, value in zip(header, values, strict=True)})
    return cells


def write_readme(table: str) -> None:
    """Replace the README's table (markers included) with ``table``."""
    text = README.read_text()
    start, end = text.index(START), text.index(END) + len(END)
    README.write_text(text[:start] + table + text[end:])


def main() -> None:
    """Run every cell against a fresh sim and gateway, and rewrite the README's table."""
    sim = start_in_thread()
    try:
        with tempfile.TemporaryDirectory() as folder, matrix_clients(sim, Path(folder)) as clients:
            cells = {
                (feature.name, wire.name): cell(feature, wire.name, clients)
                for feature in FEATURES
                for wire in PROVIDERS
            }
    finally:
        sim.stop()
    write_readme(render(cells))
    sys.stdout.write(render(cells) + "\n")


if __name__ == "__main__":
    main()
