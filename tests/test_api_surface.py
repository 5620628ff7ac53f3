"""The public Python surface: ``hudi_md.Table``'s members (a front object over a table state, each
member a deliberate choice) and the error classes (every ``HudiMdError`` the package defines is
defined in ``hudi_md.errors`` and exported from there and from ``hudi_md``, as are the warnings
``hudi_md.errors`` defines)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import hudi_md
import hudi_md.errors
from hudi_md.api import Table
from hudi_md.errors import HudiMdError
from hudi_md.table.state import TableState

# Table's members, all of them: adding one is a decision, made here and in Table's docstring.
TABLE_MEMBERS = {
    "file_slices",
    "metadata_table",
    "options",
    "partition_fields",
    "partitions",
    "plan",
    "read",
    "read_batches",
    "schema",
    "state",
    "storage_stats",
    "table_name",
    "table_type",
    "table_version",
    "timeline",
    "uri",
}

# Modules that cannot be imported outside their own runner: Alembic's migration environment
# reads Alembic's context, which exists only while Alembic runs it.
NOT_IMPORTABLE = {"hudi_md.metastore_server.migrations.env"}


def _public_members(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_table_shows_the_documented_members_only(table_path) -> None:
    assert _public_members(Table) == TABLE_MEMBERS
    table = hudi_md.open_table(str(table_path("sample_table/cow/v9_txns_simple_meta.zip")))
    # an instance adds none: the state's members stay behind `state`
    assert {name for name in dir(table) if not name.startswith("_")} == TABLE_MEMBERS
    assert not isinstance(table, TableState) and isinstance(table.state, TableState)
    with pytest.raises(AttributeError):
        table.config  # noqa: B018 - an internal of the state, reached through table.state
    doc = inspect.getdoc(Table) or ""
    undocumented = sorted(m for m in TABLE_MEMBERS if f"``{m}" not in doc)
    assert undocumented == [], "Table's docstring lists its members"


def test_table_members_answer_from_its_state(table_path) -> None:
    table = hudi_md.open_table(
        str(table_path("sample_table/mor/avro/v9_txns_simple_meta.zip")), {"hoodie.metadata.enable": "true"}
    )
    state = table.state
    assert (table.uri, table.table_name, table.table_type, table.table_version) == (
        state.uri,
        state.config.table_name,
        "MERGE_ON_READ",
        9,
    )
    assert table.partition_fields == ["region"] and table.schema == state.schema
    assert table.timeline is state.timeline and table.metadata_table is state.metadata_table
    assert table.partitions() == state.partitions() == ["region=apac", "region=eu", "region=us"]
    assert dict(table.options) == {"hoodie.metadata.enable": "true"}
    with pytest.raises(TypeError):
        table.options["hoodie.metadata.enable"] = "false"  # type: ignore[index]
    with pytest.raises(AttributeError):
        table.uri = "elsewhere"  # type: ignore[misc]
    assert repr(table) == f"Table({state.uri!r}, version=9, type=MERGE_ON_READ)"


def _package_modules() -> list[str]:
    root = Path(hudi_md.__file__).parent
    names = []
    for info in pkgutil.walk_packages([str(root)], "hudi_md."):
        if info.name in NOT_IMPORTABLE or info.name.endswith(".__main__"):
            continue  # __main__ runs the command line
        names.append(info.name)
    return names


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def test_every_error_is_defined_in_errors_and_exported() -> None:
    modules = _package_modules()
    assert len(modules) > 100  # the walk found the package
    for name in modules:
        importlib.import_module(name)
    errors = {c for c in _subclasses(HudiMdError) if c.__module__.startswith("hudi_md")} | {HudiMdError}
    defined_elsewhere = sorted(
        f"{c.__module__}.{c.__qualname__}" for c in errors if c.__module__ != "hudi_md.errors"
    )
    assert defined_elsewhere == [], "define errors in hudi_md/errors.py"
    names = {c.__name__ for c in errors}
    assert names <= set(hudi_md.errors.__all__), sorted(names - set(hudi_md.errors.__all__))
    assert names <= set(hudi_md.__all__), sorted(names - set(hudi_md.__all__))
    for cls in errors:
        assert getattr(hudi_md, cls.__name__) is cls
        assert getattr(hudi_md.errors, cls.__name__) is cls
    # errors.__all__ names the errors and the warnings hudi-md issues, and hudi_md all of them
    exported = {getattr(hudi_md.errors, n) for n in hudi_md.errors.__all__}
    assert {c for c in exported if not issubclass(c, Warning)} == errors
    assert set(hudi_md.errors.__all__) <= set(hudi_md.__all__)


def test_errors_keep_their_old_import_paths() -> None:
    from hudi_md.storage.retry import StorageError
    from hudi_md.table.layout import MetadataRequiredError, StorageLayoutError
    from hudi_md.write.lock import LockError, LockLostError, LockTimeoutError
    from hudi_md.write.writer import CommitCompletedError

    moved = [
        StorageError,
        MetadataRequiredError,
        StorageLayoutError,
        LockError,
        LockLostError,
        LockTimeoutError,
        CommitCompletedError,
    ]
    assert [getattr(hudi_md.errors, c.__name__) for c in moved] == moved
    # what callers catch them as
    assert issubclass(StorageError, OSError) and issubclass(StorageLayoutError, ValueError)
    assert issubclass(MetadataRequiredError, hudi_md.MetadataTableError)
    assert issubclass(LockTimeoutError, LockError)


def test_every_public_name_resolves() -> None:
    for name in hudi_md.__all__:
        assert getattr(hudi_md, name) is not None, name
    assert hudi_md.WriteResult.__module__ == "hudi_md.write.result"
    assert callable(hudi_md.write)  # the function, not the subpackage of the same name
