"""Providers: one sans-I/O adapter per upstream wire format.

Each adapter turns core requests into ``HttpRequest`` values and upstream
answers into core results or classified ``AttemptFailure``s. Depends on
``laneway.core`` only; no policy lives here.
"""
