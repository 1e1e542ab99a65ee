"""Spans of a finished call: one per call, a child per attempt, built from the record.

Start and end times come from the ``CallRecord`` (``time`` is the call's wall
start, ``latency`` its length; attempts run one after another, each
``elapsed`` long and followed by its ``waited`` backoff, except the attempts
of a hedge race, which say when they ``began``: their spans are siblings that
overlap), so no span is open while a call runs. Attributes follow the OpenTelemetry GenAI semantic
conventions; token counts are left unset when the upstream reported none.
"""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace import TracerProvider as Provider
from opentelemetry.util.types import AttributeValue

from laneway.core.records import CallRecord
from laneway.core.types import NOT_FAILED, Attempt, Usage

OPERATIONS = {"chat": "chat", "embed": "embeddings", "ocr": "ocr"}
"""Lane kind -> ``gen_ai.operation.name``."""
PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "azure": "azure.ai.openai",
}
"""Source provider -> ``gen_ai.provider.name`` (the semantic conventions' well-known values)."""
TRACER = "laneway"
NS = 1_000_000_000


class SpanObserver:
    """A ``CallObserver`` turning every finished call into spans on ``provider``'s tracer.

    With a ``BatchSpanProcessor`` ending a span only enqueues it; export runs
    on the processor's own thread.
    """

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(TRACER)

    def observe(self, record: CallRecord) -> None:
        """Emit the call's span and one child per attempt."""
        start = round(record.time * NS)
        end = start + round(record.latency * NS)
        operation = OPERATIONS.get(record.kind, record.kind)
        call = self.tracer.start_span(
            f"{operation} {record.lane}".strip(),
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes=call_attributes(record, operation),
        )
        if not call.is_recording():  # sampled out: so is every attempt of its trace
            call.end(end_time=end)
            return
        context = set_span_in_context(call)
        cursor = start + round((record.queue_wait or 0.0) * NS)
        for number, attempt in enumerate(record.attempts, 1):
            began = cursor if attempt.began is None else start + round(attempt.began * NS)
            begun = min(began, end)
            finished = min(begun + round(attempt.elapsed * NS), end)
            child = self.tracer.start_span(
                f"attempt {number} {attempt.source}",
                context=context,
                kind=SpanKind.CLIENT,
                start_time=begun,
                attributes=attempt_attributes(record, attempt, number),
            )
            if attempt.outcome not in NOT_FAILED:
                child.set_status(Status(StatusCode.ERROR, attempt.message or attempt.outcome))
            child.end(end_time=finished)
            cursor = max(cursor, finished + round(attempt.waited * NS))
        settle(call, record)
        call.end(end_time=end)


def settle(span: Span, record: CallRecord) -> None:
    """Mark a failed call's span as an error naming the error code."""
    if record.outcome != "ok":
        span.set_attribute("error.type", record.error or record.outcome)
        span.set_status(Status(StatusCode.ERROR, record.error or record.outcome))


def call_attributes(record: CallRecord, operation: str) -> dict[str, AttributeValue]:
    """The call span's attributes: GenAI conventions plus ``laneway.*``."""
    out: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.request.model": record.lane,
        "laneway.lane": record.lane,
        "laneway.kind": record.kind,
        "laneway.outcome": record.outcome,
        "laneway.attempts": len(record.attempts),
        "laneway.pushbacks": record.pushbacks,
        "laneway.cache": record.cache,
        "laneway.stream": record.stream,
    }
    optional: dict[str, AttributeValue | None] = {
        "gen_ai.response.model": record.model,
        "laneway.source": record.source,
        "http.response.status_code": record.status,
        "laneway.request_id": record.meta.request_id,
        "laneway.caller": record.meta.caller,
        "laneway.ttfb": record.ttfb,
        "laneway.queue_wait": record.queue_wait,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    if record.provider is not None:
        out.update(provider_attributes(record.provider))
    out.update(usage_attributes(record.usage))
    return out


def attempt_attributes(
    record: CallRecord, attempt: Attempt, number: int
) -> dict[str, AttributeValue]:
    """One attempt's attributes: its source, outcome, status, wait and own usage."""
    out: dict[str, AttributeValue] = {
        "laneway.lane": record.lane,
        "laneway.source": attempt.source,
        "laneway.attempt": number,
        "laneway.attempt.outcome": attempt.outcome,
        "laneway.attempt.pushback": attempt.pushback,
        "laneway.attempt.waited": attempt.waited,
        "laneway.attempt.continuation": attempt.continuation,
    }
    if attempt.began is not None:
        out["laneway.attempt.began"] = attempt.began
    if attempt.status is not None:
        out["http.response.status_code"] = attempt.status
    if attempt.outcome not in NOT_FAILED:
        out["error.type"] = attempt.outcome
    if attempt.source == record.source and record.provider is not None:
        out.update(provider_attributes(record.provider))
        if record.model is not None:
            out["gen_ai.request.model"] = record.model
    if attempt.usage is not None:
        out.update(usage_attributes(attempt.usage))
    return out


def provider_attributes(provider: str) -> dict[str, AttributeValue]:
    """``gen_ai.provider.name`` and the older ``gen_ai.system`` it replaced."""
    name = PROVIDERS.get(provider, provider)
    return {"gen_ai.provider.name": name, "gen_ai.system": name}


def usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    """Token counts that are known; an unknown count is left out, never written as 0."""
    out: dict[str, AttributeValue] = {}
    if usage.prompt_tokens is not None:
        out["gen_ai.usage.input_tokens"] = usage.prompt_tokens
    if usage.completion_tokens is not None:
        out["gen_ai.usage.output_tokens"] = usage.completion_tokens
    if usage.known:
        out["laneway.usage_source"] = usage.source
    return out


def exporting_provider(exporter: str) -> TracerProvider:
    """A tracer provider batching spans to ``exporter`` (``otlp`` over HTTP, or ``console``).

    The OTLP exporter reads its endpoint, headers and timeout from the
    standard ``OTEL_EXPORTER_OTLP_*`` variables; the resource reads
    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (service name
    ``laneway`` when neither names one). Queued spans are flushed at exit.
    """
    provider = TracerProvider(resource=service_resource(), shutdown_on_exit=True)
    provider.add_span_processor(BatchSpanProcessor(span_exporter(exporter)))
    return provider


def span_exporter(exporter: str) -> SpanExporter:
    """The named exporter, imported only when chosen."""
    if exporter == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def service_resource() -> Resource:
    """The resource from the environment, named ``laneway`` unless it names itself."""
    resource = Resource.create()
    name = resource.attributes.get("service.name")
    if isinstance(name, str) and name.startswith("unknown_service"):
        return Resource.create({"service.name": TRACER})
    return resource
