"""``CallParts``: what a call needs of its engine, handed to the modules that run calls.

The call modules (``embedding``, ``stream``, ``structured``) used to take the
whole ``Engine`` and reach into it, so they and ``gateway`` imported each
other. They take these parts instead: the transport that reaches upstreams,
the clock, the call loop (admission, retries), the recorder (telemetry rows,
metrics, prices) and the per-item embedding cache. ``gateway`` imports them;
nothing here imports ``gateway``.
"""

from __future__ import annotations

from dataclasses import dataclass

from laneway.core.clock import Clock
from laneway.core.transport import Transport
from laneway.engine.call import CallLoop
from laneway.engine.embedding_cache import EmbeddingCache
from laneway.engine.lane import Lane
from laneway.engine.recording import Recorder
from laneway.policy.deadline import Deadline


@dataclass(frozen=True, slots=True)
class CallParts:
    """The collaborators one call uses; the ``Engine`` owns them and closes them."""

    transport: Transport
    clock: Clock
    loop: CallLoop
    recorder: Recorder
    embedding_cache: EmbeddingCache

    def deadline(self, lane: Lane, caller_seconds: float | None) -> Deadline:
        """The lane's deadline, tightened by the caller's own when that is shorter."""
        now = self.clock.now()
        own = Deadline.after(now, lane.config.deadline)
        if caller_seconds is None:
            return own
        return own.earliest(Deadline.after(now, caller_seconds))
