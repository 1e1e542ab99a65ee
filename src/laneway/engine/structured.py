"""Structured output: a pydantic model's JSON schema in, a validated instance out.

The schema goes upstream in OpenAI's ``response_format`` form (adapters for
other wire formats translate it); the answer is validated with pydantic,
and an invalid one is re-asked: the model sees its answer and the
validation errors and tries again, up to ``reasks`` times (2 by default:
one re-ask still left 3% of calls invalid in production measurements).
Every ask runs under the one deadline of the whole call, and usage is
summed over the asks (unknown if any ask's is).

Validation happens after the call loop has finished each ask, so an
invalid answer is never an attempt failure: the source answered as asked,
and its health must not suffer for the model's mistake. An invalid answer
is never cached either (``Engine.run_chat``'s ``accept``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from laneway.core.clock import Clock
from laneway.core.errors import DeadlineExceeded, RequestInvalid, ResultInvalid
from laneway.core.records import CallMeta
from laneway.core.types import Attempt, CacheStatus, ChatRequest, LLMResponse, Usage
from laneway.core.units import format_duration
from laneway.core.usage import sum_usage
from laneway.engine.lane import Lane
from laneway.policy.deadline import Deadline

M = TypeVar("M", bound=BaseModel)
DEFAULT_REASKS = 2
MAX_ERRORS_SHOWN = 20
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


class RunChat(Protocol):
    """``Engine.run_chat``: one chat call on a resolved lane; refused answers stay uncached."""

    def __call__(
        self,
        lane: Lane,
        request: ChatRequest,
        *,
        deadline: float | None = None,
        meta: CallMeta | None = None,
        accept: Callable[[LLMResponse], bool] | None = None,
    ) -> Awaitable[LLMResponse]: ...


@dataclass(slots=True)
class StructuredResponse(Generic[M]):
    """A validated structured answer and the facts of every ask it took."""

    value: M
    content: str
    lane: str
    source: str
    model: str
    usage: Usage
    attempts: tuple[Attempt, ...]
    elapsed: float
    asks: int
    cache: CacheStatus = "bypass"
    cost: Decimal | None = None
    """Every ask's cost summed; ``None`` when any ask's is unknown (see ``cost_unknown``)."""
    cost_unknown: str | None = None


async def structured(
    run_chat: RunChat,
    clock: Clock,
    lane: Lane,
    request: ChatRequest,
    schema: type[M],
    *,
    reasks: int = DEFAULT_REASKS,
    strict: bool = False,
    deadline: Deadline,
    meta: CallMeta | None = None,
) -> StructuredResponse[M]:
    """Ask ``lane`` for an instance of ``schema``; ``ResultInvalid`` if none comes."""
    if reasks < 0:
        raise RequestInvalid("reasks", "must be 0 or more")
    asker = _Asker(run_chat, clock, lane, schema, deadline, meta)
    params = {**request.params, "response_format": response_format(schema, strict)}
    messages = list(request.messages)
    for number in range(1, reasks + 2):
        response = await asker.ask(ChatRequest(messages, params), number)
        outcome = validate(schema, response.content)
        if not isinstance(outcome, tuple):
            return asker.result(outcome, response, number)
        errors = outcome
        messages += [
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": reask_message(errors)},
        ]
    raise asker.invalid(response.content, errors, reasks + 1)


class _Asker(Generic[M]):
    """One structured call's asks: each under the call's deadline, all tallied."""

    def __init__(
        self,
        run_chat: RunChat,
        clock: Clock,
        lane: Lane,
        schema: type[M],
        overall: Deadline,
        meta: CallMeta | None,
    ) -> None:
        self.run_chat = run_chat
        self.clock = clock
        self.lane = lane
        self.schema = schema
        self.overall = overall
        self.meta = meta
        self.start = clock.now()
        self.answers: list[LLMResponse] = []
        self.attempts: list[Attempt] = []

    async def ask(self, request: ChatRequest, number: int) -> LLMResponse:
        """One ask with what is left of the deadline; a valid answer may be cached."""
        remaining = self.overall.remaining(self.clock.now())
        if remaining <= 0:
            raise self._deadline((), number)
        try:
            response = await self.run_chat(
                self.lane,
                request,
                deadline=remaining,
                meta=self.meta,
                accept=lambda answer: not isinstance(validate(self.schema, answer.content), tuple),
            )
        except DeadlineExceeded as exc:
            raise self._deadline(exc.attempts, number) from exc
        self.answers.append(response)
        self.attempts.extend(response.attempts)
        return response

    def result(self, value: M, response: LLMResponse, asks: int) -> StructuredResponse[M]:
        """The success: the value, the last answer's facts, every ask's usage, cost, attempts."""
        cost, cost_unknown = summed_cost(self.answers)
        return StructuredResponse(
            value=value,
            content=response.content,
            lane=response.lane,
            source=response.source,
            model=response.model,
            usage=sum_usage(answer.usage for answer in self.answers),
            attempts=tuple(self.attempts),
            elapsed=self.clock.now() - self.start,
            asks=asks,
            cache=response.cache,
            cost=cost,
            cost_unknown=cost_unknown,
        )

    def invalid(self, output: str, errors: tuple[str, ...], asks: int) -> ResultInvalid:
        """The failure after the last re-ask, carrying the last answer and its errors."""
        return ResultInvalid(
            f"lane {self.lane.name}: the answer did not match {self.schema.__name__} "
            f"after {asks} ask(s): {'; '.join(errors[:3])}",
            output=output,
            errors=errors,
            **self._facts(tuple(self.attempts)),
        )

    def _deadline(self, last: tuple[Attempt, ...], number: int) -> DeadlineExceeded:
        attempts = (*self.attempts, *last)
        budget = format_duration(self.overall.at - self.start)
        return DeadlineExceeded(
            f"lane {self.lane.name}: deadline of {budget} passed during ask {number} "
            f"after {len(attempts)} attempt(s)",
            **self._facts(attempts),
        )

    def _facts(self, attempts: tuple[Attempt, ...]) -> dict[str, Any]:
        return {
            "lane": self.lane.name,
            "attempts": attempts,
            "elapsed": self.clock.now() - self.start,
            "deadline": self.overall.at - self.start,
        }


def summed_cost(answers: Sequence[LLMResponse]) -> tuple[Decimal | None, str | None]:
    """The asks' costs summed, or the first unknown one's reason."""
    total = Decimal(0)
    for answer in answers:
        if answer.cost is None:
            return None, answer.cost_unknown
        total += answer.cost
    return total, None


def response_format(schema: type[BaseModel], strict: bool) -> dict[str, Any]:
    """OpenAI's ``json_schema`` response format for ``schema``.

    ``strict`` asks the provider to enforce the schema while generating; it
    needs a schema OpenAI's strict mode accepts (every field required, no
    extra properties), so it is off unless the caller says so.
    """
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema.model_json_schema(), "strict": strict},
    }


def validate(schema: type[M], content: str) -> M | tuple[str, ...]:
    """The instance ``content`` encodes, or what is wrong with it (one line per error).

    A Markdown code fence around the JSON is tolerated: models add one even
    when asked for bare JSON.
    """
    fenced = _FENCE.match(content)
    try:
        return schema.model_validate_json(fenced.group(1) if fenced else content)
    except ValidationError as exc:
        return describe_errors(exc.errors(include_url=False))


def describe_errors(errors: Sequence[Any]) -> tuple[str, ...]:
    """``path: message`` per error, at most ``MAX_ERRORS_SHOWN`` of them."""
    lines = []
    for error in errors[:MAX_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"{where}: {error['msg']}")
    return tuple(lines)


def reask_message(errors: Sequence[str]) -> str:
    """The user turn that asks again, quoting what was wrong."""
    listed = "\n".join(f"- {line}" for line in errors)
    return (
        "Your answer does not match the required JSON schema:\n"
        f"{listed}\n"
        "Answer again with only a JSON object that matches the schema."
    )
