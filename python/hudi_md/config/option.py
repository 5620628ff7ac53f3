"""One configuration key: :class:`ConfigOption` (its type, hudi-md's default, Apache Hudi's default,
where it applies, what it does) and the typed read of its value from an options mapping.

Values parse as Apache Hudi parses them: booleans ``true``/``false`` (any case), integers, doubles,
an enum's names (any case), comma-separated lists. A value that does not parse raises
:class:`~hudi_md.errors.InvalidOptionError` naming the key and the value. An absent or empty value
is the default.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

from hudi_md.errors import InvalidOptionError

T = TypeVar("T")
D = TypeVar("D")

OptionType = Literal["boolean", "int", "long", "double", "string", "enum", "list", "size"]
SCOPES: tuple[str, ...] = ("read", "write", "table", "metastore", "storage", "spark")
TYPES: tuple[str, ...] = ("boolean", "int", "long", "double", "string", "enum", "list", "size")


class NotInHudi:
    """The ``hudi_default`` of a key Apache Hudi does not have (hudi-md's own)."""

    _instance: NotInHudi | None = None

    def __new__(cls) -> NotInHudi:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_IN_HUDI"

    def __reduce__(self) -> str:
        return "NOT_IN_HUDI"


NOT_IN_HUDI = NotInHudi()

_UNSET: Any = object()

# size suffixes of "size" options (512m, 1g): binary, as Spark's byte strings
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20}
_SIZE_UNITS.update({"g": 1 << 30, "gb": 1 << 30})


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One key hudi-md reads.

    ``default`` is hudi-md's default (None: unset, the reader decides and ``doc`` says how; ``T``
    then includes None); ``hudi_default`` Apache Hudi 1.2's (None: Hudi has the key without a
    default; :data:`NOT_IN_HUDI`: the key is hudi-md's own). Where Hudi has the key the two are
    equal unless ``differs_from_hudi``, and then ``doc`` says why. ``scopes``: where it applies
    (read, write, table, metastore, storage, spark). ``choices``: an enum's values.
    ``alternatives``: older names, read (as Hudi reads them) when ``key`` is not set.
    """

    key: str
    type: OptionType
    default: T
    hudi_default: T | NotInHudi | None
    scopes: tuple[str, ...]
    doc: str
    choices: tuple[str, ...] | None = None
    alternatives: tuple[str, ...] = ()
    differs_from_hudi: bool = False

    @property
    def in_hudi(self) -> bool:
        return self.hudi_default is not NOT_IN_HUDI

    @property
    def keys(self) -> tuple[str, ...]:
        """``key`` and its alternatives, in the order they are read."""
        return (self.key, *self.alternatives)

    # --- reading ------------------------------------------------------------------------------

    def given_key(self, options: Mapping[str, Any]) -> str | None:
        """The key (``key`` or an alternative) that ``options`` set to a non-empty value."""
        for key in self.keys:
            value = options.get(key)
            if value is not None and str(value).strip() != "":
                return key
        return None

    def is_set(self, options: Mapping[str, Any]) -> bool:
        return self.given_key(options) is not None

    def raw(self, options: Mapping[str, Any]) -> str | None:
        """The value as given (a string), None when unset."""
        key = self.given_key(options)
        return None if key is None else str(options[key])

    @overload
    def get(self, options: Mapping[str, Any]) -> T: ...

    @overload
    def get(self, options: Mapping[str, Any], default: D) -> T | D: ...

    def get(self, options: Mapping[str, Any], default: Any = _UNSET) -> Any:
        """The typed value of this key in ``options``; unset: ``default`` if given, else
        :attr:`default`. A value that does not parse raises :class:`InvalidOptionError`."""
        key = self.given_key(options)
        if key is None:
            return self.default if default is _UNSET else default
        return self._parse(options[key], key)

    def parse(self, value: Any) -> T:
        """``value`` as this option's type (:class:`InvalidOptionError` when it does not parse)."""
        return self._parse(value, self.key)

    def invalid(self, value: Any, reason: str, key: str | None = None) -> InvalidOptionError:
        """The error for a value of this key that is refused: ``<key>='<value>': <reason>``."""
        return InvalidOptionError(f"{key or self.key}={str(value)!r}: {reason}")

    def _parse(self, value: Any, key: str) -> Any:
        text = str(value).strip()
        kind = self.type
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise self.invalid(value, "not true or false", key)
            return lowered == "true"
        if kind in ("int", "long"):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            try:
                return int(text)
            except ValueError:
                raise self.invalid(value, "not an integer", key) from None
        if kind == "double":
            try:
                return float(text)
            except ValueError:
                raise self.invalid(value, "not a number", key) from None
        if kind == "enum":
            assert self.choices is not None
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise self.invalid(value, f"not one of {', '.join(self.choices)}", key)
        if kind == "list":
            if isinstance(value, list | tuple):
                return tuple(str(v).strip() for v in value if str(v).strip())
            return tuple(v.strip() for v in text.split(",") if v.strip())
        if kind == "size":
            return _parse_size(self, value, key)
        return str(value)  # a string as given (names may not be trimmed into other names)

    def __str__(self) -> str:
        return self.key


def _parse_size(option: ConfigOption[Any], value: Any, key: str) -> int:
    text = str(value).strip().lower()
    digits = text.rstrip("kmgb")
    unit = text[len(digits) :]
    if not digits.isdigit() or unit not in _SIZE_UNITS:
        raise option.invalid(value, "not a size in bytes (e.g. 536870912 or 512m)", key)
    return int(digits) * _SIZE_UNITS[unit]


# --- the registry ----------------------------------------------------------------------------------

_REGISTRY: dict[str, ConfigOption[Any]] = {}
# every name an option is read by (keys and alternatives) → the option
_BY_NAME: dict[str, ConfigOption[Any]] = {}
# prefixes under which any key is read (hoodie.record.merge.property.<name>)
_PREFIXES: dict[str, str] = {}
_LOCK = threading.Lock()


def register(option: ConfigOption[T]) -> ConfigOption[T]:
    """Add ``option`` to the registry; a key (or alternative) declared twice is a bug."""
    if option.type not in TYPES:
        raise ValueError(f"{option.key}: unknown type {option.type!r}")
    if not option.scopes or any(s not in SCOPES for s in option.scopes):
        raise ValueError(f"{option.key}: scopes must be among {', '.join(SCOPES)}, got {option.scopes}")
    if (option.type == "enum") != (option.choices is not None):
        raise ValueError(f"{option.key}: an enum has choices, other types have none")
    if option.in_hudi and option.hudi_default != option.default and not option.differs_from_hudi:
        raise ValueError(
            f"{option.key}: hudi-md's default {option.default!r} is not Apache Hudi's "
            f"{option.hudi_default!r}; set differs_from_hudi and say why in doc"
        )
    with _LOCK:
        for name in option.keys:
            if name in _BY_NAME:
                raise ValueError(f"{name} is declared twice ({_BY_NAME[name].key}, {option.key})")
        _REGISTRY[option.key] = option
        for name in option.keys:
            _BY_NAME[name] = option
    return option


def register_prefix(prefix: str, doc: str) -> str:
    """Keys starting with ``prefix`` are read as a family (the rest of the key is a name)."""
    _PREFIXES[prefix] = doc
    return prefix


def option_for(name: str) -> ConfigOption[Any] | None:
    """The option read by ``name`` (its key or an alternative), None when none is."""
    return _BY_NAME.get(name)


def known_prefix(name: str) -> str | None:
    return next((p for p in _PREFIXES if name.startswith(p)), None)


def registered() -> list[ConfigOption[Any]]:
    return sorted(_REGISTRY.values(), key=lambda o: o.key)


# --- declaring options ----------------------------------------------------------------------------
# One function per type, so each declaration reads as what it is and type checkers see the value's
# type. ``hudi``: Apache Hudi's default (None: Hudi has no default; NOT_IN_HUDI: not Hudi's key).


def _declare(
    key: str,
    kind: OptionType,
    default: Any,
    hudi: Any,
    scopes: tuple[str, ...],
    doc: str,
    choices: tuple[str, ...] | None = None,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    return register(
        ConfigOption(key, kind, default, hudi, scopes, doc, choices, alternatives, differs_from_hudi)
    )


@overload
def boolean(
    key: str,
    default: bool,
    *,
    hudi: bool | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[bool]: ...


@overload
def boolean(
    key: str,
    default: None,
    *,
    hudi: bool | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[bool | None]: ...


def boolean(
    key: str,
    default: bool | None,
    *,
    hudi: bool | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "boolean"
    return _declare(key, kind, default, hudi, scopes, doc, None, alternatives, differs_from_hudi)


@overload
def integer(
    key: str,
    default: int,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    long: bool = False,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[int]: ...


@overload
def integer(
    key: str,
    default: None,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    long: bool = False,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[int | None]: ...


def integer(
    key: str,
    default: int | None,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    long: bool = False,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "long" if long else "int"
    return _declare(key, kind, default, hudi, scopes, doc, None, alternatives, differs_from_hudi)


@overload
def double(
    key: str,
    default: float,
    *,
    hudi: float | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[float]: ...


@overload
def double(
    key: str,
    default: None,
    *,
    hudi: float | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[float | None]: ...


def double(
    key: str,
    default: float | None,
    *,
    hudi: float | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "double"
    return _declare(key, kind, default, hudi, scopes, doc, None, alternatives, differs_from_hudi)


@overload
def string(
    key: str,
    default: str,
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[str]: ...


@overload
def string(
    key: str,
    default: None,
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[str | None]: ...


def string(
    key: str,
    default: str | None,
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "string"
    return _declare(key, kind, default, hudi, scopes, doc, None, alternatives, differs_from_hudi)


@overload
def enum(
    key: str,
    default: str,
    choices: tuple[str, ...],
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[str]: ...


@overload
def enum(
    key: str,
    default: None,
    choices: tuple[str, ...],
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[str | None]: ...


def enum(
    key: str,
    default: str | None,
    choices: tuple[str, ...],
    *,
    hudi: str | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    if default is not None and default not in choices:
        raise ValueError(f"{key}: default {default!r} is not among its choices")
    kind: OptionType = "enum"
    return _declare(key, kind, default, hudi, scopes, doc, choices, alternatives, differs_from_hudi)


@overload
def string_list(
    key: str,
    default: tuple[str, ...],
    *,
    hudi: tuple[str, ...] | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[tuple[str, ...]]: ...


@overload
def string_list(
    key: str,
    default: None,
    *,
    hudi: tuple[str, ...] | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[tuple[str, ...] | None]: ...


def string_list(
    key: str,
    default: tuple[str, ...] | None,
    *,
    hudi: tuple[str, ...] | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    alternatives: tuple[str, ...] = (),
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "list"
    return _declare(key, kind, default, hudi, scopes, doc, None, alternatives, differs_from_hudi)


@overload
def size(
    key: str,
    default: int,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    differs_from_hudi: bool = False,
) -> ConfigOption[int]: ...


@overload
def size(
    key: str,
    default: None,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    differs_from_hudi: bool = False,
) -> ConfigOption[int | None]: ...


def size(
    key: str,
    default: int | None,
    *,
    hudi: int | NotInHudi | None,
    scopes: tuple[str, ...],
    doc: str,
    differs_from_hudi: bool = False,
) -> ConfigOption[Any]:
    kind: OptionType = "size"
    return _declare(key, kind, default, hudi, scopes, doc, None, (), differs_from_hudi)
