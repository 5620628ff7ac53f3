"""`hudi-md`'s failures (issue 39): one line on stderr, `hudi-md: <what is at fault> (hint: ...)`,
nothing on stdout, no traceback (but with `--debug` or `HUDI_MD_DEBUG=1`); exit code 2 for what
the command was given (usage, options, the path, names), 1 for a failure while it ran. The
convention is the docstring of `hudi_md.cli`.

The sweep over every command runs in process (click's runner); the traps a user met run as a
user would, in a subprocess of the CLI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
from pathlib import Path

import click
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import hudi_md
from hudi_md.cli import main
from test_cli import run  # the one way the CLI tests run the command as a subprocess

OPTIONS = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
}
ROWS = pa.table({"uuid": ["a", "b", "c"], "city": ["sf", "sf", "la"], "ts": [1, 1, 1]})


@pytest.fixture(scope="module")
def trips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("errors") / "trips"
    hudi_md.write(ROWS, str(path), operation="insert", options=OPTIONS)
    return path


def one_line(stderr: str, *fragments: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hudi-md: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def refused(proc: subprocess.CompletedProcess[str] | Result, *fragments: str, code: int = 2) -> str:
    rc = proc.returncode if isinstance(proc, subprocess.CompletedProcess) else proc.exit_code
    assert rc == code, (rc, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    return one_line(proc.stderr, *fragments)


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


# --- every command taking a table path --------------------------------------------------------------

# what each command needs besides PATH to get as far as opening the table
EXTRA_ARGS: dict[str, list[str]] = {
    "rollback": ["20240101000000000"],
    "restore": ["20240101000000000"],
    "metadata drop-index": ["column_stats"],
    "index schedule": ["--partitions", "record_index"],
    "index drop": ["--partitions", "column_stats"],
}


def _path_commands() -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}

    def walk(group: click.Group, prefix: str) -> None:
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                walk(command, f"{prefix}{name} ")
            elif any(p.name == "path" for p in command.params):
                out[f"{prefix}{name}"] = command

    walk(main, "")
    return out


PATH_COMMANDS = sorted(_path_commands())


def test_the_sweep_covers_the_commands() -> None:
    assert {"table show", "read", "clean", "metadata validate", "index run", "metastore register"} <= set(
        PATH_COMMANDS
    )


def _args(command: str, path: str) -> list[str]:
    words = command.split()
    if command == "metastore register":
        return [*words, path, "--db", "lake", "--table", "t", "--uri", "http://127.0.0.1:1"]
    if command == "metadata drop-index":
        return [*words, path, *EXTRA_ARGS[command]]
    return [*words, path, *EXTRA_ARGS.get(command, [])]


@pytest.mark.parametrize("command", PATH_COMMANDS)
def test_a_regular_file_as_the_path(command: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    line = refused(invoke(*_args(command, str(notes))), f"{notes} is a file, not a Hudi table")
    assert "hint: PATH must be a Hudi table's base path" in line


@pytest.mark.parametrize("command", [c for c in PATH_COMMANDS if c != "metastore register"])
def test_a_path_with_no_table(command: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for path in (empty, tmp_path / "nothing"):
        refused(invoke(*_args(command, str(path))), f"no Hudi table at {path}")
    assert list(empty.iterdir()) == []  # a writer command left nothing behind


# --- the traps, as a user meets them ------------------------------------------------------------------


def test_a_missing_filesystem_package() -> None:
    missing = [
        (scheme, extra)
        for scheme, extra, package in (("gs", "gcs", "gcsfs"), ("abfs", "azure", "adlfs"))
        if importlib.util.find_spec(package) is None
    ]
    if not missing:
        pytest.skip("gcsfs and adlfs are both installed")
    scheme, extra = missing[0]
    refused(run("table", "show", f"{scheme}://bucket/trips", check=False), f"pip install 'hudi-md[{extra}]'")


def test_bad_options(trips: Path) -> None:
    for command in (("table", "show"), ("clean",), ("metadata", "validate")):
        line = refused(run(*command, str(trips), "-o", "nokeyvalue", check=False), "expected KEY=VALUE")
        assert "'nokeyvalue'" in line and "--help" in line
    refused(run("metadata", "stats", str(trips), "-o", "=x", check=False), "expected KEY=VALUE, got '=x'")
    refused(
        run("read", str(trips), "-o", "hoodie.metadata.enable=maybe", check=False),
        "hoodie.metadata.enable",
        "'maybe'",
    )
    # was dropped silently: the client's options of the metastore commands
    refused(run("metastore", "ls", "-o", "nokeyvalue", check=False), "expected KEY=VALUE")


def test_unknown_partitions_and_names(trips: Path) -> None:
    line = refused(
        run("metadata", "list-files", str(trips), "--partition", "nosuch", check=False),
        "partition 'nosuch' does not exist",
    )
    assert "metadata list-partitions" in line
    # was a ValueError traceback after taking the table lock
    refused(
        run("metadata", "create", str(trips), "--partitions", "files,nosuch", check=False),
        "cannot build nosuch",
        "hint: hudi-md builds files, column_stats",
    )
    refused(
        run("metadata", "repair", str(trips), "--partitions", "nosuch", check=False), "cannot build nosuch"
    )
    refused(
        run("index", "schedule", str(trips), "--partitions", "nosuch", check=False), "cannot index nosuch"
    )
    refused(
        run("metadata", "drop-index", str(trips), "nosuch", check=False), "no metadata-table index nosuch"
    )
    for command in ("rollback", "restore"):
        line = refused(
            run(command, str(trips), "20991231235959999", check=False), "no completed write instant"
        )
        assert "hint: 'hudi-md commits show PATH' lists them" in line
    assert hudi_md.open_table(str(trips)).state.config.metadata_partitions == [
        "column_stats",
        "files",
        "partition_stats",
    ]


def test_usage_errors_are_one_line_naming_the_help(trips: Path) -> None:
    refused(run("metadata", "validate", check=False), "Missing argument 'PATH'", "metadata validate --help")
    refused(run("table", "show", str(trips), "--nosuch", check=False), "No such option '--nosuch'")
    refused(run("nosuch", check=False), "No such command 'nosuch'")
    refused(run("read", str(trips), "--limit", "many", check=False), "'many' is not a valid integer")
    # a group without its command still shows its help
    proc = run("metadata", check=False)
    assert proc.returncode == 2 and "Commands:" in proc.stdout + proc.stderr


def test_a_failure_while_running_exits_1(trips: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(trips, broken)
    (commit,) = (broken / ".hoodie" / "timeline").glob("*.commit")
    commit.write_bytes(b"garbage")
    line = refused(run("commits", "show", str(broken), check=False), commit.name, code=1)
    assert "hint: 'hudi-md metadata validate PATH'" in line
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = refused(run("metastore", "ls", "--uri", f"http://127.0.0.1:{port}", check=False), code=1)
    assert "hint: check --uri" in line


def test_an_internal_error_is_one_line_unless_debug(trips: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hudi_md.metadata.stats

    def broken(*_args: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(hudi_md.metadata.stats, "metadata_stats", broken)
    line = refused(invoke("metadata", "stats", str(trips)), "internal error: KeyError: 'boom'", code=1)
    assert "--debug" in line
    for debug in (
        invoke("--debug", "metadata", "stats", str(trips)),
        invoke("metadata", "stats", str(trips), env={**os.environ, "HUDI_MD_DEBUG": "1"}),
    ):
        assert debug.exit_code == 1 and debug.stdout == ""
        assert debug.stderr.startswith("Traceback") and "KeyError: 'boom'" in debug.stderr
        assert debug.stderr.strip().splitlines()[-1].startswith("hudi-md: internal error: KeyError")
