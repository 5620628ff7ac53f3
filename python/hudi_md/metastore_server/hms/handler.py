"""The Hive metastore API's read calls, answered from the metastore's database.

Every call is one read transaction through the services the HTTP app uses (``catalog`` for
databases and tables, ``partitions.prune`` for partition filters, in SQL with bound parameters);
nothing is kept between calls. A table with completed instants not yet applied by the snapshot
sync is synced first, as the HTTP partition routes do.

What is not answered:

* writes (create / alter / drop of databases, tables, partitions, functions, statistics...):
  a MetaException saying the table is managed by hudi-md: tables are registered with
  ``hudi-md metastore register`` and change through hudi-md's writes, whose commits the snapshot
  sync applies;
* ``get_partitions_by_expr`` (a serialized Hive expression): "unknown method", which Hive clients
  answer by fetching partitions and filtering themselves; ``get_partitions_by_filter`` with a
  filter outside :mod:`.filters`' grammar: a MetaException (Spark then fetches every partition
  when ``spark.sql.hive.metastorePartitionPruningFallbackOnException`` is set);
* every other call: a MetaException naming the call, logged as unsupported.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar
from urllib.parse import unquote

from hmsclient.genthrift.hive_metastore import ttypes as H
from sqlalchemy.engine import Connection, Engine
from thrift.Thrift import TApplicationException

from hudi_md.metastore import protocol as P
from hudi_md.metastore_server import catalog, partitions, snapshot
from hudi_md.metastore_server.catalog import TableRow, find_table
from hudi_md.metastore_server.db import read_tx
from hudi_md.metastore_server.errors import ApiError
from hudi_md.metastore_server.hms import tables as HT
from hudi_md.metastore_server.hms.filters import FilterError, parse_filter

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_DB = "default"
MANAGED = (
    "{call}: the databases and tables of this metastore are managed by hudi-md, which does not change "
    "them through the Hive metastore API (register tables with `hudi-md metastore register`, change "
    "them with hudi-md's writes)"
)
# Calls that change something, by name: answered "managed by hudi-md".
_WRITE_CALL = re.compile(
    r"^(create|drop|alter|add|append|rename|exchange|truncate|update|delete|set_aggr|mark|grant|revoke"
    r"|compact|lock|unlock|heartbeat|open_txn|abort|commit|fire_listener|flushCache|cm_recycle|insert"
    r"|setMetaConf|add_master_key|remove_master_key|add_token|remove_token)"
)


def _meta(message: str) -> H.MetaException:
    return H.MetaException(message=message)


def _no_such(message: str) -> H.NoSuchObjectException:
    return H.NoSuchObjectException(message=message)


def _hive_error(e: ApiError) -> Exception:
    return _no_such(e.message) if e.status == 404 else _meta(e.message)


def _matcher(pattern: str | None) -> Callable[[str], bool]:
    """Hive's name patterns: ``*`` any characters, ``|`` alternatives, case-insensitive."""
    if pattern is None or pattern.strip() in ("", "*"):
        return lambda _name: True
    alternatives = [
        re.compile(".*".join(re.escape(piece) for piece in alt.strip().split("*")), re.IGNORECASE)
        for alt in pattern.split("|")
    ]
    return lambda name: any(a.fullmatch(name) for a in alternatives)


def _limit(items: list[T], max_parts: int | None) -> list[T]:
    return items if max_parts is None or max_parts < 0 else items[:max_parts]


class HmsHandler:
    """The handler the generated ``ThriftHiveMetastore.Processor`` calls."""

    def __init__(self, engine: Engine, metastore_url: str | None = None) -> None:
        self.engine = engine
        # This metastore's HTTP API, given to Spark as the tables' hoodie.metaserver.uris.
        self.metastore_url = metastore_url

    # --- plumbing ---------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        try:
            with read_tx(self.engine) as conn:
                yield conn
        except ApiError as e:
            raise _hive_error(e) from None

    def _synced(self, db: str, name: str, fn: Callable[[Connection, TableRow], T]) -> T:
        """``fn`` on a table whose completed instants the snapshot sync has applied."""
        with self._read() as conn:
            row = find_table(conn, db, name)
            if not row.unsynced:
                return fn(conn, row)
        snapshot.sync_table(self.engine, row.tbl_id)
        with self._read() as conn:
            return fn(conn, find_table(conn, db, name))

    def __getattr__(self, call: str) -> Callable[..., NoReturn]:
        if call.startswith("__"):
            raise AttributeError(call)

        def refuse(*_args: Any) -> NoReturn:
            if _WRITE_CALL.match(call):
                log.info("Hive metastore write refused: %s", call)
                raise _meta(MANAGED.format(call=call))
            log.warning("Hive metastore call not supported: %s", call)
            raise _meta(f"{call} is not supported by the hudi-md metastore")

        return refuse

    # --- session ----------------------------------------------------------------------------------

    def set_ugi(self, user_name: str, group_names: Sequence[str]) -> list[str]:
        return list(group_names or [])

    def getMetaConf(self, key: str) -> str:
        raise _meta(f"getMetaConf: no metastore configuration {key!r} is exposed")

    def get_config_value(self, name: str, defaultValue: str) -> str:
        return defaultValue

    def get_all_functions(self) -> H.GetAllFunctionsResponse:
        return H.GetAllFunctionsResponse(functions=[])

    def get_functions(self, dbName: str, pattern: str) -> list[str]:
        return []

    def get_function(self, dbName: str, funcName: str) -> NoReturn:
        raise _no_such(f"no function {dbName}.{funcName}: the hudi-md metastore keeps none")

    def getVersion(self) -> str:
        return "hudi-md metastore (Hive metastore API 2.x)"

    # --- databases --------------------------------------------------------------------------------

    def _database_names(self) -> list[str]:
        with self._read() as conn:
            names = [d.name for d in catalog.list_databases(conn)]
        # Spark creates "default" at start when the metastore lacks it; it exists here, empty.
        return sorted({*names, DEFAULT_DB})

    def get_all_databases(self) -> list[str]:
        return self._database_names()

    def get_databases(self, pattern: str) -> list[str]:
        match = _matcher(pattern)
        return [n for n in self._database_names() if match(n)]

    def get_database(self, name: str) -> H.Database:
        with self._read() as conn:
            found = catalog.list_databases(conn, name)
        if found:
            return HT.hive_database(found[0])
        if name == DEFAULT_DB:
            return HT.hive_database(
                P.Database(name=DEFAULT_DB, description="the default database", created="")
            )
        raise _no_such(f"no database {name}")

    # --- tables -----------------------------------------------------------------------------------

    def _table(self, db: str, name: str) -> H.Table:
        with self._read() as conn:
            row = find_table(conn, db, name)
            return HT.hive_table(row, catalog.table_params(conn, row.tbl_id), self.metastore_url)

    def _table_names(self, db: str) -> list[str]:
        with self._read() as conn:
            try:
                return [t.name for t in catalog.list_tables(conn, db)]
            except ApiError as e:
                if e.status == 404:
                    return []  # as Hive: no tables match in a database it does not have
                raise

    def get_table(self, dbname: str, tbl_name: str) -> H.Table:
        return self._table(dbname, tbl_name)

    def get_table_req(self, req: H.GetTableRequest) -> H.GetTableResult:
        return H.GetTableResult(table=self._table(req.dbName, req.tblName))

    def get_tables(self, db_name: str, pattern: str) -> list[str]:
        match = _matcher(pattern)
        return [n for n in self._table_names(db_name) if match(n)]

    def get_tables_by_type(self, db_name: str, pattern: str, tableType: str) -> list[str]:
        if tableType and tableType.upper() != "EXTERNAL_TABLE":
            return []
        return self.get_tables(db_name, pattern)

    def get_all_tables(self, db_name: str) -> list[str]:
        return self._table_names(db_name)

    def get_table_objects_by_name(self, dbname: str, tbl_names: Sequence[str]) -> list[H.Table]:
        out = []
        for name in tbl_names or []:
            try:
                out.append(self._table(dbname, name))
            except H.NoSuchObjectException:
                continue  # Hive leaves out the names it does not find
        return out

    def get_table_objects_by_name_req(self, req: H.GetTablesRequest) -> H.GetTablesResult:
        return H.GetTablesResult(tables=self.get_table_objects_by_name(req.dbName, req.tblNames))

    def get_table_meta(
        self, db_patterns: str, tbl_patterns: str, tbl_types: Sequence[str]
    ) -> list[H.TableMeta]:
        if tbl_types and "EXTERNAL_TABLE" not in [t.upper() for t in tbl_types]:
            return []
        match_db, match_tbl = _matcher(db_patterns), _matcher(tbl_patterns)
        out = []
        for db in self._database_names():
            if match_db(db):
                out += [
                    H.TableMeta(dbName=db, tableName=t, tableType="EXTERNAL_TABLE", comments=None)
                    for t in self._table_names(db)
                    if match_tbl(t)
                ]
        return out

    def _columns(self, db: str, name: str) -> list[H.FieldSchema]:
        table = self._table(db, name)
        return list(table.sd.cols) + list(table.partitionKeys)

    def get_fields(self, db_name: str, table_name: str) -> list[H.FieldSchema]:
        return list(self._table(db_name, table_name).sd.cols)

    def get_fields_with_environment_context(
        self, db_name: str, table_name: str, _ctx: Any
    ) -> list[H.FieldSchema]:
        return self.get_fields(db_name, table_name)

    def get_schema(self, db_name: str, table_name: str) -> list[H.FieldSchema]:
        return self._columns(db_name, table_name)

    def get_schema_with_environment_context(
        self, db_name: str, table_name: str, _ctx: Any
    ) -> list[H.FieldSchema]:
        return self._columns(db_name, table_name)

    # --- partitions -------------------------------------------------------------------------------

    def _partitions(
        self, db: str, name: str, flt: P.Filter | None, max_parts: int | None
    ) -> list[H.Partition]:
        def answer(conn: Connection, row: TableRow) -> list[H.Partition]:
            if not row.partition_fields:
                return []  # Hive: an unpartitioned table has no partitions
            hive = HT.hive_table(row, catalog.table_params(conn, row.tbl_id), self.metastore_url)
            found = partitions.prune(conn, row, P.PartitionQuery(filter=flt))
            return [HT.hive_partition(row, hive, p) for p in _limit(found, max_parts)]

        try:
            return self._synced(db, name, answer)
        except ApiError as e:
            raise _hive_error(e) from None

    def _spec_filter(self, db: str, name: str, values: Sequence[str]) -> P.Filter:
        """A partial partition spec (values in key order, ``""`` any) as a filter."""
        with self._read() as conn:
            fields = [f.name for f in find_table(conn, db, name).partition_fields]
        if len(values) > len(fields):
            raise _meta(f"{len(values)} partition values for {len(fields)} partition columns of {db}.{name}")
        terms = [
            P.Filter(op="is_null", column=f)
            if v == HT.HIVE_DEFAULT_PARTITION
            else P.Filter(op="eq", column=f, value=v)
            for f, v in zip(fields, values, strict=False)
            if v != ""
        ]
        return P.Filter(op="and", args=terms)

    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int) -> list[H.Partition]:
        return self._partitions(db_name, tbl_name, None, max_parts)

    def get_partitions_with_auth(
        self, db_name: str, tbl_name: str, max_parts: int, _user: str, _groups: Any
    ) -> list[H.Partition]:
        return self._partitions(db_name, tbl_name, None, max_parts)

    def get_partitions_by_filter(
        self, db_name: str, tbl_name: str, filter: str, max_parts: int
    ) -> list[H.Partition]:
        try:
            parsed = parse_filter(filter or "")
        except FilterError as e:
            raise _meta(f"get_partitions_by_filter on {db_name}.{tbl_name}: {e}") from None
        return self._partitions(db_name, tbl_name, parsed, max_parts)

    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str) -> int:
        return len(self.get_partitions_by_filter(db_name, tbl_name, filter, -1))

    def get_partitions_by_expr(self, req: H.PartitionsByExprRequest) -> NoReturn:
        # "Unknown method" is what Hive's client takes for "filter on my side" (its
        # IncompatibleMetastoreException fallback); the expression is Hive's serialized Kryo.
        raise TApplicationException(
            TApplicationException.UNKNOWN_METHOD,
            "get_partitions_by_expr is not supported by the hudi-md metastore",
        )

    def get_partitions_ps(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int
    ) -> list[H.Partition]:
        return self._partitions(db_name, tbl_name, self._spec_filter(db_name, tbl_name, part_vals), max_parts)

    def get_partitions_ps_with_auth(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int, _user: str, _groups: Any
    ) -> list[H.Partition]:
        return self.get_partitions_ps(db_name, tbl_name, part_vals, max_parts)

    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int) -> list[str]:
        return self._names(db_name, tbl_name, self.get_partitions(db_name, tbl_name, max_parts))

    def get_partition_names_ps(
        self, db_name: str, tbl_name: str, part_vals: Sequence[str], max_parts: int
    ) -> list[str]:
        return self._names(db_name, tbl_name, self.get_partitions_ps(db_name, tbl_name, part_vals, max_parts))

    def _names(self, db: str, name: str, parts: list[H.Partition]) -> list[str]:
        keys = [k.name for k in self._table(db, name).partitionKeys]
        return [
            "/".join(f"{HT.escape(k)}={HT.escape(v)}" for k, v in zip(keys, p.values, strict=True))
            for p in parts
        ]

    def get_partition(self, db_name: str, tbl_name: str, part_vals: Sequence[str]) -> H.Partition:
        with self._read() as conn:
            n = len(find_table(conn, db_name, tbl_name).partition_fields)
        if len(part_vals) != n or "" in part_vals:
            raise _meta(f"{db_name}.{tbl_name} has {n} partition columns; got values {list(part_vals)}")
        found = self.get_partitions_ps(db_name, tbl_name, part_vals, 1)
        if not found:
            raise _no_such(f"no partition {list(part_vals)} in {db_name}.{tbl_name}")
        return found[0]

    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> H.Partition:
        return self.get_partition(db_name, tbl_name, self._values_of(db_name, tbl_name, part_name))

    def get_partitions_by_names(self, db_name: str, tbl_name: str, names: Sequence[str]) -> list[H.Partition]:
        out = []
        for name in names or []:
            try:
                out.append(self.get_partition_by_name(db_name, tbl_name, name))
            except H.NoSuchObjectException:
                continue
        return out

    def _values_of(self, db: str, name: str, part_name: str) -> list[str]:
        """``k1=v1/k2=v2`` (Hive-escaped) as values in partition-key order."""
        keys = [k.name for k in self._table(db, name).partitionKeys]
        pairs = {}
        for piece in part_name.split("/"):
            key, sep, value = piece.partition("=")
            if not sep:
                raise _meta(f"partition name {part_name!r} is not k=v[/k=v...]")
            pairs[unquote(key)] = unquote(value)
        if sorted(pairs) != sorted(keys):
            raise _meta(f"partition name {part_name!r} does not name the partition columns {keys}")
        return [pairs[k] for k in keys]
