"""What every ``hudi-md`` command shares: output (text or ``--json``), typed errors as exit code 2,
``-o KEY=VALUE`` options, opening a table or a writer, progress bars."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from typing import TYPE_CHECKING, Any

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


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (HudiMdError, FileNotFoundError) as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)

    return wrapper


def open_cli_table(path: str, options: tuple[str, ...]) -> Table:
    from hudi_md.api import open_table

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
