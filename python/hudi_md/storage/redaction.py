"""Keeping secrets (storage credentials, passwords, tokens) out of messages and logs.

The rule is Spark's (``spark.redaction.regex``, default ``(?i)secret|password|token|access[.]key``,
plus ``credential`` here): an option whose key matches is a secret, and its value is shown as
``*********(redacted)``. Since a library may quote a secret in its own error text, text leaving
the planner (error messages, log lines) has every known secret value replaced, whatever the
sentence around it.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

REDACTED = "*********(redacted)"
SECRET_KEY = re.compile(r"(?i)secret|password|token|credential|access[._-]?key")
# Values shorter than this are not scrubbed from text (a 1-3 character "secret" would garble
# every message it happens to occur in; no real credential is that short).
_MIN_SCRUBBED = 4


def is_secret_key(key: str) -> bool:
    return SECRET_KEY.search(key) is not None


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the value of every secret key replaced by :data:`REDACTED`."""
    return {k: REDACTED if is_secret_key(str(k)) else v for k, v in options.items()}


def secret_values(options: Mapping[str, Any]) -> set[str]:
    """The values of the secret keys of ``options`` (nested mappings included)."""
    out: set[str] = set()
    for k, v in options.items():
        if isinstance(v, Mapping):
            out |= secret_values(v)
        elif v is not None and is_secret_key(str(k)) and len(str(v)) >= _MIN_SCRUBBED:
            out.add(str(v))
    return out


class Scrubber:
    """Replaces every secret value it was shown by :data:`REDACTED` in text."""

    def __init__(self) -> None:
        self._secrets: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def remember(self, values: Iterable[str]) -> None:
        new = {v for v in values if len(v) >= _MIN_SCRUBBED}
        if not new <= self._secrets:
            with self._lock:
                self._secrets = self._secrets | new

    def scrub(self, text: str) -> str:
        # Longest first: a secret containing another is replaced whole.
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


class ScrubbedStream(io.TextIOBase):
    """A text stream writing through ``scrubber`` to ``target`` (the planner's stderr, which the
    shim copies into the Spark driver's or executor's log)."""

    def __init__(self, target: TextIO, scrubber: Scrubber) -> None:
        self._target = target
        self._scrubber = scrubber

    def write(self, s: str) -> int:
        self._target.write(self._scrubber.scrub(s))
        return len(s)

    def flush(self) -> None:
        self._target.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False
