"""``Redactor``: every configured secret cut out of text before laneway emits it.

An upstream may quote the credential it was sent ("Incorrect API key
provided: Bearer sk-..."), a database driver may print its URL, a caller may
paste a key where a model name goes. One ``Redactor`` is built per process
from the configuration's secrets (upstream keys, server keys, passwords in
the Redis and PostgreSQL URLs) and applied where outside text enters: the
upstream transport's error answers and stream lines, error bodies, log
records, telemetry rows, ``/metrics`` and ``/readyz``.

It is one precompiled regular expression of every secret's literal forms
(as written, percent-encoded as in a URL, JSON-escaped as in a body), longest
first; a ``search`` that finds nothing costs well under a microsecond on a
short line, and with no secrets configured every method returns its input.
Values shorter than ``MIN_SECRET_LENGTH`` are not taken: they cannot be told
apart from ordinary text.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, AnyStr
from urllib.parse import quote

REDACTED = "[redacted]"
STORED_KEY_PATTERN = r"sk-lw-[A-Za-z0-9_-]{43}"
"""What a stored key's secret looks like (``laneway.state.keys.records.new_secret``): laneway
keeps only its digest, so it is redacted by its shape wherever a caller pastes one."""
MIN_SECRET_LENGTH = 4


LEAD = 4
"""Characters of each secret's form that begin it (``MIN_SECRET_LENGTH`` at least)."""
_PATTERN_SYNTAX = re.compile(r"[][(){}.*+?^$|\\]")


def _leads(forms: Iterable[str], patterns: Iterable[str]) -> tuple[str, ...] | None:
    """What every match begins with: each form's first ``LEAD`` characters, each pattern's
    literal opening; ``None`` when a pattern opens with no literal (then every value is searched).

    ``re`` searches an alternation of literals that share no opening position by position,
    several microseconds a streamed read; ``in`` for a few short leads finds the values
    that hold no secret at a fraction of that.
    """
    leads = {form[:LEAD] for form in forms}
    for pattern in patterns:
        syntax = _PATTERN_SYNTAX.search(pattern)
        literal = pattern if syntax is None else pattern[: syntax.start()]
        if not literal:
            return None
        leads.add(literal[:LEAD])
    return tuple(sorted(leads))


def _holds_a_lead(value: AnyStr, leads: tuple[AnyStr, ...] | None) -> bool:
    return leads is None or any(map(value.__contains__, leads))


class Redactor:
    """Replaces each secret of ``secrets`` (in any of its forms) by ``[redacted]``, and
    whatever matches one of ``patterns`` (regular expressions of secrets laneway made and
    does not keep: stored keys' ``sk-lw-...``)."""

    __slots__ = ("_byte_leads", "_bytes", "_text", "_text_leads")

    def __init__(self, secrets: Iterable[str], patterns: Iterable[str] = ()) -> None:
        forms = sorted(
            {
                form
                for secret in secrets
                if len(secret) >= MIN_SECRET_LENGTH
                for form in _forms(secret)
            },
            key=len,
            reverse=True,
        )
        patterns = list(patterns)
        alternatives = [*patterns, *map(re.escape, forms)]
        joined = "|".join(alternatives)
        self._text = re.compile(joined) if alternatives else None
        self._bytes = re.compile(joined.encode()) if alternatives else None
        leads = _leads(forms, patterns)
        self._text_leads = leads
        self._byte_leads = None if leads is None else tuple(lead.encode() for lead in leads)

    @property
    def active(self) -> bool:
        """Whether there is anything to redact."""
        return self._text is not None

    def text(self, value: str) -> str:
        """``value`` without secrets."""
        if self._text is None or not _holds_a_lead(value, self._text_leads):
            return value
        if self._text.search(value) is None:
            return value
        return self._text.sub(REDACTED, value)

    def bytes(self, value: bytes) -> bytes:
        """``value`` (UTF-8 text) without secrets (every streamed read comes through here)."""
        if self._bytes is None:
            return value
        leads = self._byte_leads
        if leads is not None:
            for lead in leads:
                if lead in value:
                    break
            else:
                return value
        if self._bytes.search(value) is None:
            return value
        return self._bytes.sub(REDACTED.encode(), value)


NO_SECRETS = Redactor(())
"""The redactor of a configuration without secrets: every method returns its input."""

_log_redactor = NO_SECRETS


def redact_logs(redactor: Redactor) -> None:
    """Redact every log record this process makes from now on (message and traceback).

    Installed once as the log record factory, so it covers every logger and
    handler (uvicorn's too) whatever the logging configuration; a later call
    replaces the redactor rather than stacking another factory.
    """
    global _log_redactor
    if _log_redactor is NO_SECRETS and redactor.active:
        logging.setLogRecordFactory(_redacting_factory(logging.getLogRecordFactory()))
    if redactor.active:
        _log_redactor = redactor


def _redacting_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def redacted_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: the handler reports it, as without us
            return record
        clean = _log_redactor.text(message)
        if clean is not message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[1] is not None:
            trace = logging.Formatter().formatException(record.exc_info)
            record.exc_text = _log_redactor.text(trace)
        return record

    return redacted_record


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` can appear in emitted text."""
    return {
        secret,
        quote(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }
