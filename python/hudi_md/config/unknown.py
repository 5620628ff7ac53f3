"""Option keys nobody reads: a ``hoodie.*`` or ``hudi_md.*`` key that is not in the registry is
either one of Apache Hudi's keys that hudi-md does not use (logged once at INFO) or a mistake
(warned once, with the nearest known key: "unknown option hoodie.metadata.enabel (did you mean
hoodie.metadata.enable?)").

Apache Hudi's keys are those of ``hudi_keys.json``, generated from Hudi's bundle jar by
``scripts/hudi-config-keys``. Every entry point calls :func:`check_options` on the options it is
given: ``open_table``, the writers, the CLI's ``-o``, and the Spark plugin's Python side.
"""

from __future__ import annotations

import difflib
import json
import logging
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

from hudi_md.config.option import known_prefix, option_for, registered
from hudi_md.errors import UnknownOptionWarning

log = logging.getLogger(__name__)
# The warning is shown by the warnings module; without this, logging's last-resort handler would
# print it a second time in applications that never configured logging.
log.addHandler(logging.NullHandler())

CHECKED_PREFIXES = ("hoodie.", "hudi_md.")
HUDI_KEYS_FILE = "hudi_keys.json"

_seen: set[str] = set()
_seen_lock = threading.Lock()
# Extra places a warning goes (the Spark processes send it to the driver, where a user sees it).
_reporters: list[Callable[[str], None]] = []


@cache
def hudi_config() -> dict[str, Any]:
    """``hudi_keys.json``: Apache Hudi's version, and its keys with their defaults."""
    text = resources.files("hudi_md.config").joinpath(HUDI_KEYS_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def hudi_keys() -> frozenset[str]:
    """Every key Apache Hudi declares, older (alternative) names included."""
    keys = hudi_config()["keys"]
    return frozenset(keys) | {alt for entry in keys.values() for alt in entry.get("alternatives", ())}


@cache
def _known_names() -> tuple[str, ...]:
    return tuple(name for option in registered() for name in option.keys)


def nearest_key(key: str) -> str | None:
    """The known key ``key`` most likely misspells: hudi-md's first, else Apache Hudi's."""
    for candidates in (_known_names(), sorted(hudi_keys())):
        found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.8)
        if found:
            return found[0]
    return None


def add_reporter(report: Callable[[str], None]) -> None:
    """Also send each unknown-option warning to ``report`` (once per key, as the warning)."""
    if report not in _reporters:
        _reporters.append(report)


def check_options(options: Mapping[str, Any] | Iterable[str]) -> None:
    """Check the options an entry point was given: a known key's value must parse
    (:class:`~hudi_md.errors.InvalidOptionError` naming the key and the value, whether or not this
    call reads it); a key no one reads warns, once per key and process, with an
    :class:`~hudi_md.errors.UnknownOptionWarning` (and a logging warning) naming the nearest known
    key; Apache Hudi's keys hudi-md does not use are logged once at INFO. Keys outside
    ``hoodie.*`` / ``hudi_md.*`` (storage options) are not checked."""
    values = options if isinstance(options, Mapping) else dict.fromkeys(options)
    for raw, value in values.items():
        key = str(raw)
        option = option_for(key)
        if option is not None:
            if value is not None and str(value).strip() != "":
                option.get({key: value})
            continue
        if not key.startswith(CHECKED_PREFIXES) or known_prefix(key):
            continue
        with _seen_lock:
            if key in _seen:
                continue
            _seen.add(key)
        if key in hudi_keys():
            log.info("%s is Apache Hudi's option; hudi-md does not use it", key)
            continue
        suggestion = nearest_key(key)
        message = f"unknown option {key}" + (f" (did you mean {suggestion}?)" if suggestion else "")
        warnings.warn(message, UnknownOptionWarning, stacklevel=2)
        log.warning("%s", message)
        for report in list(_reporters):
            try:
                report(message)
            except Exception:  # a reporter must not fail the read or write that checked
                log.debug("reporting %r failed", message, exc_info=True)


def forget_checked() -> None:
    """Forget which keys were reported (each is reported again once): for tests."""
    with _seen_lock:
        _seen.clear()
