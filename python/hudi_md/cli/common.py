"""What every ``hudi-md`` command shares: output (text, or JSON with ``--json``: :func:`json_option`,
:func:`emit`), failures as one line ``hudi-md: <message> (hint: ...)`` with the exit codes the
package docstring sets (:class:`HudiMdGroup`, :func:`report_error`), ``-o KEY=VALUE`` options,
opening a table or a writer, progress on stderr (:func:`progress_option`, :class:`Progress`)."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from hudi_md.errors import (
    CorruptFileError,
    HudiMdError,
    InvalidOptionError,
    MetadataTableError,
    MetastoreError,
    MissingExtraError,
    SchemaEvolutionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
    WriteConflictError,
)

if TYPE_CHECKING:
    from hudi_md.api import Table
    from hudi_md.table.state import TableState
    from hudi_md.write.writer import HudiWriter

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# Exit codes (the package docstring says when each is used).
EXIT_FAILED = 1
EXIT_USAGE = 2

DEBUG_ENV = "HUDI_MD_DEBUG"


# --- state of one invocation ---------------------------------------------------------------------


def _state(ctx: click.Context | None = None) -> dict[str, Any]:
    """The invocation's flags (json, quiet, debug): the root context's ``obj``, which the group's
    options and its command's options both set."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None:
        return {}
    root = ctx.find_root()
    if not isinstance(root.obj, dict):
        root.obj = {}
    return root.obj


def _flag_setter(key: str, when: bool = True) -> Callable[[click.Context, click.Parameter, Any], None]:
    def set_flag(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if bool(value) == when:
            _state(ctx)[key] = True

    return set_flag


def json_wanted() -> bool:
    return bool(_state().get("json"))


def debug_wanted(state: Mapping[str, Any] | None = None) -> bool:
    if os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no"):
        return True
    return bool((_state() if state is None else state).get("debug"))


# --- output --------------------------------------------------------------------------------------


def json_option(shape: str, *, help_text: str | None = None) -> Callable[[F], F]:
    """``--json`` on a command, its help naming the JSON's shape (keys are snake_case, numbers are
    numbers, absent values null). ``hudi-md --json COMMAND`` is the same."""
    return click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        callback=_flag_setter("json"),
        help=help_text or f"print JSON instead of text: {shape}",
    )


def json_default(value: Any) -> Any:
    """How values JSON has no type for are written: times as ISO 8601, decimals as strings (their
    digits kept), bytes as base64; anything else as its ``str``."""
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=json_default)


def emit(data: T, text: Callable[[T], str]) -> None:
    """The command's result on stdout: JSON with ``--json``, else ``text(data)``."""
    if json_wanted():
        click.echo(to_json(data))
        return
    out = text(data)
    if out:
        click.echo(out)


# --- errors --------------------------------------------------------------------------------------


class InputError(click.ClickException):
    """What the command was given cannot be used (exit code 2); ``hint`` says what to do instead."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


# Errors about what the command was given (the path, the options, the arguments) or about a table
# it cannot work on: exit code 2. Every other failure happened while the command ran: exit code 1.
INPUT_ERRORS: tuple[type[HudiMdError], ...] = (
    TableNotFoundError,
    TableExistsError,
    InvalidOptionError,
    MissingExtraError,
    UnsupportedFeatureError,
    MetadataTableError,  # none where the command needs one (a corrupt MDT file: CorruptFileError)
    SchemaEvolutionError,
)


# the metastore's refusals of what it was asked (its other codes: conflict, internal, unreachable)
_METASTORE_INPUT_CODES = frozenset(["invalid", "unauthorized", "not_found", "exists", "too_large"])


def exit_code_of(error: BaseException) -> int:
    if isinstance(error, click.ClickException):
        return error.exit_code
    if isinstance(error, MetastoreError):
        return EXIT_USAGE if error.code in _METASTORE_INPUT_CODES else EXIT_FAILED
    if isinstance(error, INPUT_ERRORS):
        return EXIT_USAGE
    return EXIT_FAILED


def _command_path() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx is not None else "hudi-md"


def error_hint(error: BaseException) -> str | None:
    """What to try next after ``error``, for the one line a failed command prints."""
    if isinstance(error, InputError):
        return error.hint
    if isinstance(error, click.UsageError):
        path = error.ctx.command_path if error.ctx is not None else "hudi-md"
        return f"'{path} --help' lists the arguments and options"
    if isinstance(error, TableNotFoundError):
        return "PATH must be a Hudi table's base path, the directory holding .hoodie"
    if isinstance(error, MissingExtraError):
        return None  # its message names the package and the extra that installs it
    if isinstance(error, InvalidOptionError):
        return f"'{_command_path()} --help' lists the arguments and options"
    if isinstance(error, MetadataTableError):
        return "'hudi-md metadata validate PATH' checks it, 'hudi-md metadata repair PATH' rebuilds it"
    if isinstance(error, CorruptFileError):
        return "'hudi-md metadata validate PATH' checks the table's files"
    if isinstance(error, WriteConflictError):
        return "run the command again"
    if isinstance(error, MetastoreError) and error.code == "unreachable":
        return "check --uri (or hoodie.metaserver.uris) and that the server runs"
    if isinstance(error, NotADirectoryError | FileNotFoundError | PermissionError):
        return "check the path"
    if not isinstance(error, HudiMdError | OSError | click.ClickException):
        return f"run again with --debug (or {DEBUG_ENV}=1) for the traceback, and report it"
    return None


def error_message(error: BaseException) -> str:
    if isinstance(error, click.ClickException):
        return error.format_message()
    if isinstance(error, OSError) and not isinstance(error, HudiMdError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    if not isinstance(error, HudiMdError | OSError):
        return f"internal error: {type(error).__name__}: {error}"
    return str(error) or type(error).__name__


def fail(message: str, hint: str | None = None, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``hudi-md: <message>`` (and the hint) as one line on stderr and exit with ``code``."""
    line = " ".join(message.split())  # messages quoting files may hold newlines; keep one line
    click.echo(f"hudi-md: {line}" + (f" (hint: {hint})" if hint else ""), err=True)
    sys.exit(code)


def report_error(error: BaseException, state: Mapping[str, Any] | None = None) -> NoReturn:
    """End the command on ``error``: one line on stderr (the traceback before it with ``--debug``),
    exit code 2 for what the command was given, 1 for a failure while it ran."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        error.show()  # a group without its command: its help, as click prints it
        sys.exit(error.exit_code)
    if isinstance(error, click.Abort):
        fail("aborted", code=EXIT_FAILED)
    if debug_wanted(state) and not isinstance(error, click.ClickException):
        traceback.print_exception(error, file=sys.stderr)
    fail(error_message(error), error_hint(error), exit_code_of(error))


def handle_errors(fn: F) -> F:
    """Any failure of the command becomes one line on stderr and its exit code, never a traceback
    (but with ``--debug``): the same whether the command runs under ``hudi-md`` or alone."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # the group reports them (click's own handling when run alone)
        except Exception as e:
            report_error(e)

    return wrapper  # type: ignore[return-value]  # wraps(fn): called as fn is


class HudiMdGroup(click.Group):
    """The ``hudi-md`` group: every failure, click's usage errors included, ends as one line on
    stderr with the exit code of :func:`exit_code_of` (click would print ``Usage:`` and
    ``Error:`` lines, and a traceback for anything not its own)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args, prog_name, complete_var, False, windows_expand_args=windows_expand_args, **extra
            )
        state = extra.pop("obj", None)
        state = state if isinstance(state, dict) else {}
        try:
            rv = super().main(
                args,
                prog_name,
                complete_var,
                False,
                windows_expand_args=windows_expand_args,
                obj=state,
                **extra,
            )
        except Exception as e:  # SystemExit (a command's own exit code) passes
            report_error(e, state)
        sys.exit(rv if isinstance(rv, int) else 0)


def debug_option(fn: F) -> F:
    def turn_on(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            _state(ctx)["debug"] = True
        logger = logging.getLogger("hudi_md")
        if debug_wanted(_state(ctx)) and not any(getattr(h, "hudi_md_cli", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            handler.hudi_md_cli = True  # type: ignore[attr-defined]  # added once per process
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)

    return click.option(
        "--debug",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=turn_on,
        help=f"on failure, print the traceback too; log hudi-md's DEBUG records on stderr (or {DEBUG_ENV}=1)",
    )(fn)


# --- tables, writers, options --------------------------------------------------------------------


def check_table_path(path: str) -> None:
    """Refuse a local regular file as a table path up front: reading ``<file>/.hoodie`` would fail
    with an OS error naming a path the user never wrote."""
    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" not in local and os.path.isfile(local):
        raise TableNotFoundError(f"{path} is a file, not a Hudi table (a table is a directory)")


def parse_options(options: Sequence[str]) -> dict[str, str]:
    """``-o KEY=VALUE`` items as a mapping; an item without ``=`` or with an empty key is refused
    (as a usage error), not dropped."""
    opts: dict[str, str] = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="-o/--option")
        opts[key.strip()] = value
    warn_unknown_options(opts)
    return opts


def warn_unknown_options(opts: Mapping[str, str]) -> None:
    """A ``hoodie.*`` / ``hudi_md.*`` key nothing reads (misspelt): one line on stderr,
    ``hudi-md: warning: unknown option K (did you mean ...?)``, instead of Python's warning format."""
    import warnings

    from hudi_md.config import UnknownOptionWarning, check_options

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownOptionWarning)
        check_options(opts)
    for warning in caught:
        click.echo(f"hudi-md: warning: {warning.message}", err=True)


def open_cli_table(path: str, options: Sequence[str]) -> Table:
    from hudi_md.api import open_table

    check_table_path(path)
    return open_table(path, parse_options(options))


def open_cli_state(path: str, options: Sequence[str]) -> TableState:
    """The table's state (its configuration, storage, MDT, ...): what the commands that inspect
    a table rather than read its rows take."""
    return open_cli_table(path, options).state


option_flag = click.option("--option", "-o", "options", multiple=True, help="KEY=VALUE (hoodie.* or storage)")


def cli_writer(path: str, options: Sequence[str]) -> HudiWriter:
    """A writer of the existing table at ``path``: the commands change tables, never create one
    (a service run on a path without a table would leave a ``.hoodie`` folder behind)."""
    from hudi_md.table.config import TableConfig
    from hudi_md.write.writer import HudiWriter

    check_table_path(path)
    writer = HudiWriter(path, parse_options(options))
    TableConfig.load(writer.storage)  # TableNotFoundError when there is no table
    return writer


# --- progress ------------------------------------------------------------------------------------


def progress_option(fn: F) -> F:
    """``--quiet`` (and the older ``--no-progress``) on a long command: no progress on stderr."""
    fn = click.option(
        "--progress/--no-progress",
        default=True,
        hidden=True,
        expose_value=False,
        callback=_flag_setter("quiet", when=False),
        help="--no-progress is --quiet",
    )(fn)
    return click.option(
        "--quiet",
        "-q",
        is_flag=True,
        expose_value=False,
        callback=_flag_setter("quiet"),
        help="no progress on stderr (nor with --json)",
    )(fn)


class Progress:
    """What a long command reports while it runs, on stderr (stdout keeps only the result, for
    scripts): a line per step, a bar per metadata-table partition built, the time taken. Silent
    with ``--quiet`` or ``--json``."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._started = time.monotonic()
        self._bar: Any = None

    def say(self, line: str) -> None:
        if self.enabled:
            self._finish_bar()
            click.echo(line, err=True)

    def done(self, what: str = "done") -> None:
        self.say(f"{what} in {time.monotonic() - self._started:.1f} s")

    def bar(self, label: str, done: int, total: int) -> None:
        """The progress callback of the builders (``(partition, done, total)``): one bar per label."""
        if not self.enabled:
            return
        if self._bar is None or self._bar.label != label:
            self._finish_bar()
            self._bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
        self._bar.update(done - self._bar.pos)

    def _finish_bar(self) -> None:
        if self._bar is not None:
            self._bar.render_finish()
            self._bar = None


@contextmanager
def command_progress() -> Iterator[Progress]:
    """The running command's :class:`Progress`; an unfinished bar is finished on exit."""
    state = _state()
    progress = Progress(not state.get("quiet") and not state.get("json"))
    try:
        yield progress
    finally:
        progress._finish_bar()
