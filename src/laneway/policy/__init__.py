"""Policy layer: pure decisions (deadline, retry, backoff, pushback; and for
source admission: quota sizes, AIMD pacing, breakers, health, selection, stall).

Depends on ``laneway.core`` only. No I/O, no reading of clocks: every decision
takes ``now`` from its caller, and randomness comes from an injected
``random.Random``.
"""
