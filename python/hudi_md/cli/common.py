"""What every ``hudi-md`` command shares: output (text or ``--json``), typed errors as one line
``hudi-md: <message> (hint: ...)`` and exit code 2,
``-o KEY=VALUE`` options, opening a table or a writer, progress bars."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from typing import TYPE_CHECKING, Any, NoReturn

import click

from hudi_md.errors import HudiMdError

if TYPE_CHECKING:
    from hudi_md.api import Table
    from hudi_md.write.writer import HudiWriter


def emit(ctx: click.Context, data: Any, text: Callable[[Any], str]) -> None:
    if ctx.obj.get("json"):
        click.echo(json.dumps(data, indent=2, default=str, sort_keys=False))
    else:
        click.echo(text(data))


def error_hint(error: BaseException) -> str | None:
    """What to try next after ``error``, for the one line a failed command prints."""
    from hudi_md.errors import (
        CorruptFileError,
        InvalidOptionError,
        MetadataTableError,
        TableNotFoundError,
        WriteConflictError,
    )

    if isinstance(error, TableNotFoundError):
        return "PATH must be a Hudi table's base path, the directory holding .hoodie"
    if isinstance(error, InvalidOptionError):
        return "see the command's --help"
    if isinstance(error, MetadataTableError):
        return "'hudi-md metadata validate PATH' checks it, 'hudi-md metadata repair PATH' rebuilds it"
    if isinstance(error, CorruptFileError):
        return "'hudi-md metadata validate PATH' checks the table's files"
    if isinstance(error, WriteConflictError):
        return "run the command again"
    if isinstance(error, NotADirectoryError | FileNotFoundError | PermissionError):
        return "check the path"
    return None


def fail(message: str, hint: str | None = None, code: int = 2) -> NoReturn:
    """Print ``hudi-md: <message>`` (and the hint) as one line on stderr and exit with ``code``."""
    line = " ".join(message.split())  # messages quoting files may hold newlines; keep one line
    click.echo(f"hudi-md: {line}" + (f" (hint: {hint})" if hint else ""), err=True)
    sys.exit(code)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Typed errors (and the OS's, such as a path that is not a directory) become one line on
    stderr and exit code 2, never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (HudiMdError, OSError) as e:
            message = str(e)
            if isinstance(e, OSError) and not isinstance(e, HudiMdError) and e.filename is not None:
                message = f"{e.filename}: {e.strerror or e}"
            fail(message, error_hint(e))

    return wrapper


def check_table_path(path: str) -> None:
    """Refuse a local regular file as a table path up front: reading ``<file>/.hoodie`` would fail
    with an OS error naming a path the user never wrote."""
    from hudi_md.errors import TableNotFoundError

    local = path[len("file://") :] if path.startswith("file://") else path
    if "://" not in local and os.path.isfile(local):
        raise TableNotFoundError(f"{path} is a file, not a Hudi table (a table is a directory)")


def open_cli_table(path: str, options: tuple[str, ...]) -> Table:
    from hudi_md.api import open_table

    check_table_path(path)
    opts = {}
    for item in options:
        if "=" not in item:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--option")
        k, v = item.split("=", 1)
        opts[k] = v
    return open_table(path, opts)


option_flag = click.option("--option", "-o", "options", multiple=True, help="KEY=VALUE (hoodie.* or storage)")
json_flag = click.option("--json", "as_json", is_flag=True, help="machine-readable output")


def set_json(ctx: click.Context, as_json: bool) -> None:
    ctx.ensure_object(dict)
    ctx.obj["json"] = ctx.obj.get("json") or as_json


def cli_writer(path: str, options: tuple[str, ...]) -> HudiWriter:
    from hudi_md.write.writer import HudiWriter

    check_table_path(path)
    opts = dict(item.split("=", 1) for item in options if "=" in item)
    return HudiWriter(path, opts)


@contextlib.contextmanager
def progress_bars(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback ``(partition, done, total)`` drawing one bar per MDT partition on
    stderr (nothing when not ``enabled``); the last bar is finished on exit."""
    bar: Any = None

    def report(partition: str, done: int, total: int) -> None:
        nonlocal bar
        if not enabled:
            return
        if bar is None or bar.label != partition:
            if bar is not None:
                bar.render_finish()
            bar = click.progressbar(length=max(total, 1), label=partition, file=sys.stderr)
        bar.update(done - bar.pos)

    try:
        yield report
    finally:
        if bar is not None:
            bar.render_finish()
