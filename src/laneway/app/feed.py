"""``RecordFeed``: one hand-off of each finished call to laneway's own observers, in batches.

The recorder hands a call's record to the feed, which only appends it. The
records of one turn of the event loop go to every consumer together when that
turn ends (``call_soon``), after the answers the turn produced were written:
metrics are counted, access-log lines formatted and written, telemetry rows
queued and spans built off the request path, once per batch, instead of each
observer doing part of its work on every call. A consumer whose figures are
read between two batches (``Metrics`` at a scrape, a telemetry writer closing)
calls ``flush`` first (``BatchObserver.follow``), so what is read is never
behind. Without a running loop (a record made outside one) the batch goes at
once.

A consumer that raises is logged and the batch still reaches the others: an
observer's bug must neither fail a call nor starve the other observers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from laneway.core.records import BatchObserver, CallObserver, CallRecord

log = logging.getLogger("laneway.observers")


class RecordFeed:
    """A ``CallObserver`` handing the records of each loop turn to ``consumers`` as one batch.

    ``consumers`` are ``BatchObserver``s, or plain ``CallObserver``s, which
    are given the batch's records one by one (still off the request path).
    """

    __slots__ = ("_batched", "_loop", "_pending", "_plain", "consumers")

    def __init__(self, consumers: Sequence[BatchObserver | CallObserver]) -> None:
        self.consumers = tuple(consumers)
        """The observers behind the feed, in the order each batch reaches them."""
        self._batched: list[BatchObserver] = []
        self._plain: list[CallObserver] = []
        for consumer in consumers:
            if isinstance(consumer, BatchObserver):
                consumer.follow(self.flush)
                self._batched.append(consumer)
            else:
                self._plain.append(consumer)
        self._pending: list[CallRecord] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop a flush is scheduled on (``None``: none is)."""

    def observe(self, record: CallRecord) -> None:
        """Keep ``record`` for the batch of this turn of the loop (the only work on the path)."""
        self._pending.append(record)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._loop is not loop:  # none scheduled, or on a loop that is gone
            loop.call_soon(self.flush)
            self._loop = loop

    def flush(self) -> None:
        """Hand every record waiting to every consumer, oldest first."""
        self._loop = None
        pending = self._pending
        if not pending:
            return
        self._pending = []
        for consumer in self._batched:
            try:
                consumer.observe_batch(pending)
            except Exception:
                log.exception("observer %s failed on %d records", consumer, len(pending))
        for plain in self._plain:
            try:
                for record in pending:
                    plain.observe(record)
            except Exception:
                log.exception("observer %s failed on a record", plain)
