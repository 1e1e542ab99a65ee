"""``Laneway``: call lanes from Python with every policy enforced."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from laneway.app import Assembly, assemble
from laneway.cache.port import CacheStore
from laneway.config.load import load_config
from laneway.config.models import LanewayConfig
from laneway.core.clock import Clock
from laneway.core.errors import ConfigError, RequestInvalid
from laneway.core.messages import ChatMessage
from laneway.core.records import CallObserver
from laneway.core.shapes import chat_request
from laneway.core.transport import Transport
from laneway.core.types import (
    CacheControl,
    EmbeddingResponse,
    EmbedRequest,
    LLMResponse,
    OCRResponse,
)
from laneway.engine.chain_stream import ChatStream
from laneway.engine.gateway import Engine
from laneway.engine.structured import DEFAULT_REASKS, StructuredResponse
from laneway.metrics import Metrics

if TYPE_CHECKING:
    from laneway.accounting.pricer import Pricer
    from laneway.batch import BatchJob, InputSet, Progress
    from laneway.telemetry import TelemetryWriter

M = TypeVar("M", bound=BaseModel)

CONFIG_ENV = "LANEWAY_CONFIG"


class Laneway:
    """A configured set of lanes. Use as an async context manager, or ``aclose()``.

    Built by ``laneway.app.assemble``, as ``laneway serve`` is: every call
    leaves the same telemetry row a gateway call leaves (``telemetry:``; the
    writer starts with the first call or ``async with``, and ``aclose()``
    flushes it), feeds ``metrics`` (the gateway's ``/metrics`` object), and
    its reply carries ``cost`` (``Decimal`` USD, or ``None`` with ``cost_unknown``).
    """

    def __init__(self, built: Assembly) -> None:
        self.engine: Engine = built.engine
        self.metrics: Metrics = built.metrics
        """Every call's counts, latencies, tokens and cost (``metrics.render()``: Prometheus)."""
        self.telemetry: TelemetryWriter | None = built.telemetry
        """The writer of this client's telemetry rows; ``None`` when ``telemetry:`` is off."""
        self.pricer: Pricer = built.pricer
        """The price of every source, found once when the client was built."""

    @classmethod
    def from_config(
        cls,
        path: str | Path,
        *,
        transport: Transport | None = None,
        observers: Sequence[CallObserver] = (),
    ) -> Laneway:
        """Load ``laneway.yaml`` (and the ``.env`` beside it); cache and telemetry live beside it.

        ``observers`` receive every finished call (e.g. ``laneway.tracing.SpanObserver``).
        """
        config, environ = load_config(path)
        folder = Path(path).absolute().parent
        return cls(assemble(config, environ, folder, transport=transport, observers=observers))

    @classmethod
    def from_env(cls, variable: str = CONFIG_ENV, *, transport: Transport | None = None) -> Laneway:
        """Load the config file named by the environment variable ``variable``."""
        path = os.environ.get(variable)
        if not path:
            raise ConfigError(f"environment variable {variable} is unset (path to laneway.yaml)")
        return cls.from_config(path, transport=transport)

    @classmethod
    def from_settings(
        cls,
        config: LanewayConfig,
        *,
        environ: Mapping[str, str] | None = None,
        transport: Transport | None = None,
        clock: Clock | None = None,
        cache: CacheStore | None = None,
        observers: Sequence[CallObserver] = (),
        base_dir: str | Path | None = None,
    ) -> Laneway:
        """Build from an already-parsed config (environment defaults to the process's).

        ``base_dir`` stands for the config file's folder (relative cache and
        telemetry paths start there). Without it the cache defaults to memory
        and telemetry is written only when ``config`` declares ``telemetry:``
        (relative to the working directory). ``cache`` replaces the store
        ``cache.url`` names. ``observers`` receive every finished call.
        """
        env = dict(os.environ) if environ is None else environ
        folder = None if base_dir is None else Path(base_dir).absolute()
        built = assemble(
            config, env, folder, transport=transport, cache=cache, clock=clock, observers=observers
        )
        return cls(built)

    def _running(self) -> None:
        """Start the telemetry writer, once, inside the caller's event loop."""
        if self.telemetry is not None:
            self.telemetry.start()

    async def chat(
        self,
        lane: str,
        messages: list[ChatMessage] | list[dict[str, Any]],
        *,
        deadline: float | None = None,
        cache_control: CacheControl | None = None,
        **params: Any,
    ) -> LLMResponse:
        """One chat completion; ``deadline`` (seconds) tightens the lane's own.

        ``cache_control`` is the HTTP header's say over the lane's response
        cache: ``no-cache`` (ask afresh, keep the answer), ``no-store`` (neither).
        """
        request = chat_request(messages, params)
        self._running()
        return await self.engine.chat(lane, request, deadline=deadline, cache=cache_control)

    def chat_stream(
        self,
        lane: str,
        messages: list[ChatMessage] | list[dict[str, Any]],
        *,
        deadline: float | None = None,
        **params: Any,
    ) -> ChatStream:
        """A streamed chat completion: ``async for chunk in lw.chat_stream(...)``.

        After the last chunk, ``stream.usage`` and ``stream.cost`` hold the call's.
        """
        self._running()
        return self.engine.chat_stream(lane, chat_request(messages, params), deadline=deadline)

    async def embed(
        self,
        lane: str,
        inputs: str | list[str],
        *,
        deadline: float | None = None,
        **params: Any,
    ) -> EmbeddingResponse:
        """Embed one text or a batch; vectors come back in input order."""
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        request = EmbedRequest(texts, params.pop("dimensions", None), params)
        self._running()
        return await self.engine.embed(lane, request, deadline=deadline)

    async def structured(
        self,
        lane: str,
        messages: list[ChatMessage] | list[dict[str, Any]],
        *,
        schema: type[M],
        reasks: int = DEFAULT_REASKS,
        strict: bool = False,
        deadline: float | None = None,
        **params: Any,
    ) -> StructuredResponse[M]:
        """A chat answer validated as ``schema``, re-asked up to ``reasks`` times.

        ``result.value`` is the ``schema`` instance; ``ResultInvalid`` (with
        the last output and its errors) when every ask came back invalid.
        """
        request = chat_request(messages, params)
        self._running()
        return await self.engine.structured(
            lane, request, schema, reasks=reasks, strict=strict, deadline=deadline
        )

    async def ocr(
        self,
        lane: str,
        document: bytes,
        *,
        mime_type: str | None = None,
        deadline: float | None = None,
    ) -> OCRResponse:
        """The text of one image or PDF page, read on an OCR lane.

        ``mime_type`` (``image/png``, ``image/jpeg``, ``image/webp``,
        ``image/gif``, ``application/pdf``) is sniffed from the bytes when omitted.
        """
        self._running()
        return await self.engine.ocr(lane, document, mime_type=mime_type, deadline=deadline)

    def batch(
        self,
        lane: str,
        items: Iterable[str | dict[str, Any]] | InputSet,
        *,
        job_dir: str | Path | None = None,
        progress: Callable[[Progress], None] | None = None,
        max_concurrency: int | None = None,
        retry_failures: bool = False,
        stop_after: int | None = None,
        schema: type[BaseModel] | None = None,
        reasks: int = DEFAULT_REASKS,
        **params: Any,
    ) -> BatchJob:
        """A batch job: ``async for result in lw.batch(lane, items)``, results in input order.

        ``items`` are texts (embed lanes) or prompts / ``{"messages": [...]}``
        requests (chat lanes), each optionally with an ``id`` (or an
        ``InputSet`` from ``laneway.batch.read_input``). With ``job_dir``
        the job is checkpointed there and resumed by the same call; a job of
        another lane, model, dimension or input is refused (``JobMismatch``).
        A failed item is yielded with ``result.error`` set; ``job.tally`` holds
        the totals. ``schema`` validates chat answers with the re-ask ladder.
        ``stop_after`` calls in a row failing alike in a way no retry can fix
        (5 unless given; 0: never) stop the job with ``BatchStopped``; the
        same call resumes it.
        """
        from laneway.batch import BatchJob, BatchOptions, InputSet, items_of
        from laneway.batch.streak import STOP_AFTER

        kind = self.engine.lane(lane, ready=False).kind
        inputs = items if isinstance(items, InputSet) else items_of(items, kind)
        options = BatchOptions(
            job_dir=Path(job_dir) if job_dir is not None else None,
            max_concurrency=max_concurrency,
            retry_failures=retry_failures,
            stop_after=STOP_AFTER if stop_after is None else stop_after,
            params=params,
            schema=schema,
            reasks=reasks,
            progress=progress,
        )
        return BatchJob(self.engine, lane, inputs.items, inputs.digest, self.pricer, options)

    def embed_many(
        self,
        lane: str,
        texts: Iterable[str],
        *,
        job_dir: str | Path | None = None,
        progress: Callable[[Progress], None] | None = None,
        max_concurrency: int | None = None,
        retry_failures: bool = False,
        stop_after: int | None = None,
    ) -> BatchJob:
        """Embed a corpus as a batch job (see ``batch``): one verified vector per text, in order."""
        if self.engine.lane(lane, ready=False).kind != "embed":
            raise RequestInvalid("lane", f"{lane!r} is not an embed lane")
        return self.batch(
            lane,
            texts,
            job_dir=job_dir,
            progress=progress,
            max_concurrency=max_concurrency,
            retry_failures=retry_failures,
            stop_after=stop_after,
        )

    async def aclose(self) -> None:
        """Write the telemetry rows still queued, then close pooled connections."""
        try:
            if self.telemetry is not None:
                await self.telemetry.aclose()
        finally:
            await self.engine.aclose()

    async def __aenter__(self) -> Laneway:
        self._running()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
