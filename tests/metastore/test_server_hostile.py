"""Hostile input through the metastore's HTTP API (both databases): text that is not Unicode or that a
database cannot store (lone UTF-16 surrogates, NUL, bytes that are not UTF-8) in filters, names,
paths and bodies; path traversal and malformed names; bad JSON and wrong types; numbers out of
range. Every request answers a 4xx with the protocol's typed JSON error, never a 5xx or a redirect,
and changes nothing. On the client side every failure (a bad URI, no server, a bad token) is a
:class:`~hudi_md.errors.HudiMdError`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from server_helpers import Api, b64, commit_meta

from hudi_md.errors import HudiMdError, InvalidOptionError, MetastoreError
from hudi_md.metastore import protocol as P
from hudi_md.metastore.client import MetastoreClient
from hudi_md.metastore_server import schema as S

R = "/v1/databases/db1/tables/t1"
TS = "20990101000000000"
CODES = {c.value for c in P.ErrorCode} - {P.ErrorCode.internal.value}

# (method, path, body): a ``str`` body is sent as it is (JSON with escapes such as \ud800 that
# json.dumps of a Python string would not write), ``bytes`` as raw bytes, anything else as JSON.
Case = tuple[str, str, Any]


def _filter(f: str) -> str:
    return '{"filter": ' + f + "}"


_TABLE = '{"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE"'  # + fields + "}"
_LONE = ["\\ud800", "\\udfff", "a\\ud800b", "\\ud800\\u0041"]
_NUL = "a\\u0000b"

CASES: dict[str, Case] = {
    # --- filter values and columns ---------------------------------------------------------------
    **{
        f"filter value {v}": (
            "POST",
            f"{R}/partitions/query",
            _filter(f'{{"op": "eq", "column": "city", "value": "{v}"}}'),
        )
        for v in [*_LONE, _NUL]
    },
    "filter on a numeric column, lone surrogate": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "lt", "column": "year", "value": "\\ud800"}'),
    ),
    "filter in values, lone surrogate": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "in", "column": "city", "values": ["sf", "\\ud800"]}'),
    ),
    "filter in values, NUL": (
        "POST",
        f"{R}/partitions/query",
        _filter(f'{{"op": "in", "column": "city", "values": ["{_NUL}"]}}'),
    ),
    "filter column, lone surrogate": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "\\ud800", "value": "x"}'),
    ),
    "filter column, NUL": (
        "POST",
        f"{R}/partitions/query",
        _filter(f'{{"op": "is_null", "column": "{_NUL}"}}'),
    ),
    "filter value an object": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "city", "value": {"a": 1}}'),
    ),
    "filter value a list": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "city", "value": [1]}'),
    ),
    "filter values not a list": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "in", "column": "city", "values": "sf"}'),
    ),
    "filter values of objects": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "in", "column": "year", "values": [{"a": 1}]}'),
    ),
    "filter value 1e999": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "gt", "column": "year", "value": 1e999}'),
    ),
    "filter value NaN": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "year", "value": NaN}'),
    ),
    "filter value -Infinity": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "gt", "column": "city", "value": -Infinity}'),
    ),
    "filter op unknown": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "like", "column": "city", "value": "%"}'),
    ),
    "filter nested 3000 deep": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "not", "args": [' * 3000 + '{"op": "is_null", "column": "city"}' + "]}" * 3000),
    ),
    "filter a list": ("POST", f"{R}/partitions/query", _filter("[1, 2]")),
    "filter 20000 nodes": (
        "POST",
        f"{R}/partitions/query",
        _filter(
            '{"op": "or", "args": ['
            + ",".join(['{"op": "eq", "column": "city", "value": "x"}'] * 20000)
            + "]}"
        ),
    ),
    "include_dropped a string": ("POST", f"{R}/partitions/query", '{"include_dropped": "maybe"}'),
    # --- names and paths -------------------------------------------------------------------------
    "database %2e%2e%2f": ("GET", "/v1/databases/%2e%2e%2f", None),
    "database %2e%2e": ("GET", "/v1/databases/%2e%2e", None),
    "database ..%2f..%2fetc": ("GET", "/v1/databases/..%2f..%2fetc", None),
    "database a%2fb": ("GET", "/v1/databases/a%2fb", None),
    "database with a trailing slash": ("GET", "/v1/databases/db1/", None),
    "databases with a trailing slash": ("GET", "/v1/databases/", None),
    "database %00": ("GET", "/v1/databases/%00", None),
    "database not UTF-8": ("GET", "/v1/databases/%ED%A0%80", None),
    "database 129 chars": ("GET", "/v1/databases/" + "d" * 129, None),
    "database 20k chars": ("GET", "/v1/databases/" + "d" * 20_000, None),
    "drop database %2e%2e%2f": ("DELETE", "/v1/databases/%2e%2e%2f", None),
    "table %2e%2e%2f": ("GET", "/v1/databases/db1/tables/%2e%2e%2f", None),
    "tables of %2e%2e%2f": ("GET", "/v1/databases/%2e%2e%2f/tables", None),
    "table with a trailing slash": ("GET", f"{R}/", None),
    "table %00": ("GET", "/v1/databases/db1/tables/%00", None),
    "drop table %2e%2e": ("DELETE", "/v1/databases/db1/tables/%2e%2e", None),
    "partition %2e%2e%2f%2e%2e%2fetc": ("GET", f"{R}/partitions/%2e%2e%2f%2e%2e%2fetc", None),
    "partition %00": ("GET", f"{R}/partitions/city=%00", None),
    "partition not UTF-8": ("GET", f"{R}/partitions/city=%ED%A0%80", None),
    "partition 20k chars": ("GET", f"{R}/partitions/city=" + "p" * 20_000, None),
    "drop partition %00": ("DELETE", f"{R}/partitions/city=%00", None),
    "drop partition ..": ("DELETE", f"{R}/partitions/%2e%2e", None),
    "drop partition of an unknown table": (
        "DELETE",
        "/v1/databases/db1/tables/nope/partitions/city=sf",
        None,
    ),
    "files of partition %00": ("GET", f"{R}/snapshot/files?partition=city%3D%00", None),
    "files after not a time": ("GET", f"{R}/snapshot/files?after=%00", None),
    "tables at %00": ("GET", "/v1/tables?location=%2Fdata%2F%00", None),
    "tables at no location": ("GET", "/v1/tables", None),
    "instant ts not a time": ("POST", f"{R}/instants/..%2f/heartbeat", None),
    "instant ts 40 digits": ("DELETE", f"{R}/instants/{'1' * 40}", None),
    "metadata state %00": ("GET", f"{R}/instants/{TS}/metadata?state=%00", None),
    "metadata state unknown": ("GET", f"{R}/instants/{TS}/metadata?state=bogus", None),
    "unknown route": ("GET", "/v1/%2e%2e/%2e%2e/etc/passwd", None),
    "double slash": ("GET", "/v1//databases", None),
    # --- bodies: text ----------------------------------------------------------------------------
    "database name lone surrogate": ("POST", "/v1/databases", '{"name": "\\ud800"}'),
    "database description lone surrogate": (
        "POST",
        "/v1/databases",
        '{"name": "db9", "description": "\\ud800"}',
    ),
    "database description NUL": ("POST", "/v1/databases", f'{{"name": "db9", "description": "{_NUL}"}}'),
    "database location lone surrogate": (
        "POST",
        "/v1/databases",
        '{"name": "db9", "location": "/d/\\ud800"}',
    ),
    "database params key lone surrogate": (
        "POST",
        "/v1/databases",
        '{"name": "db9", "params": {"\\ud800": "v"}}',
    ),
    "database params value NUL": ("POST", "/v1/databases", f'{{"name": "db9", "params": {{"k": "{_NUL}"}}}}'),
    "database params key 300 chars": (
        "POST",
        "/v1/databases",
        json.dumps({"name": "db9", "params": {"k" * 300: "v"}}),
    ),
    "database name ..": ("POST", "/v1/databases", '{"name": ".."}'),
    "database name ../evil": ("POST", "/v1/databases", '{"name": "../evil"}'),
    "database name empty": ("POST", "/v1/databases", '{"name": ""}'),
    "database name a number": ("POST", "/v1/databases", '{"name": 7}'),
    "database name null": ("POST", "/v1/databases", '{"name": null}'),
    "table name lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "\\ud800", "location": "/d/x", "table_type": "COPY_ON_WRITE"}',
    ),
    "table location lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/\\ud800", "table_type": "COPY_ON_WRITE"}',
    ),
    "table location NUL": (
        "POST",
        "/v1/databases/db1/tables",
        f'{{"name": "t9", "location": "/d/{_NUL}", "table_type": "COPY_ON_WRITE"}}',
    ),
    "table location ..": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/../x", "table_type": "COPY_ON_WRITE"}',
    ),
    "table params value lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE", "params": {"k": "\\udc00"}}',
    ),
    "table params key 300 chars": (
        "POST",
        "/v1/databases/db1/tables",
        json.dumps(
            {"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE", "params": {"k" * 300: "v"}}
        ),
    ),
    "table partition field NUL": (
        "POST",
        "/v1/databases/db1/tables",
        _TABLE + f', "partition_fields": [{{"name": "{_NUL}", "type": "string"}}]}}',
    ),
    "table partition field 300 chars": (
        "POST",
        "/v1/databases/db1/tables",
        json.dumps(
            {
                "name": "t9",
                "location": "/d/x",
                "table_type": "COPY_ON_WRITE",
                "partition_fields": [{"name": "c" * 300, "type": "string"}],
            }
        ),
    ),
    "table partition field type lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        _TABLE + ', "partition_fields": [{"name": "c", "type": "\\ud800"}]}',
    ),
    "table record key lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE", "record_key_fields": ["\\ud800"]}',
    ),
    "table schema lone surrogate": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE", "schema_json": "\\ud800"}',
    ),
    "table schema NUL": (
        "POST",
        "/v1/databases/db1/tables",
        f'{{"name": "t9", "location": "/d/x", "table_type": "COPY_ON_WRITE", "schema_json": "{_NUL}"}}',
    ),
    "table type unknown": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": "/d/x", "table_type": "BOTH"}',
    ),
    "table fields wrong types": (
        "POST",
        "/v1/databases/db1/tables",
        '{"name": "t9", "location": 5, "table_type": "COPY_ON_WRITE", "params": []}',
    ),
    "instant action lone surrogate": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "\\ud800"}}',
    ),
    "instant action NUL": ("POST", f"{R}/instants", f'{{"requested_time": "{TS}", "action": "{_NUL}"}}'),
    "instant action unknown": ("POST", f"{R}/instants", f'{{"requested_time": "{TS}", "action": "bogus"}}'),
    "instant action 10k chars": (
        "POST",
        f"{R}/instants",
        json.dumps({"requested_time": TS, "action": "c" * 10_000}),
    ),
    "instant time lone surrogate": (
        "POST",
        f"{R}/instants",
        '{"requested_time": "\\ud800", "action": "commit"}',
    ),
    "instant metadata not base64": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "metadata_b64": "%%%"}}',
    ),
    "instant metadata lone surrogate": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "metadata_b64": "\\ud800"}}',
    ),
    "instant heartbeat negative": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "heartbeat_s": -1}}',
    ),
    "instant heartbeat 1e300": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "heartbeat_s": 1e300}}',
    ),
    "instant heartbeat NaN": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "heartbeat_s": NaN}}',
    ),
    "instant heartbeat Infinity": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "heartbeat_s": Infinity}}',
    ),
    "instant state completed": (
        "POST",
        f"{R}/instants",
        f'{{"requested_time": "{TS}", "action": "commit", "state": "completed"}}',
    ),
    "instant on an unknown table": (
        "POST",
        "/v1/databases/db1/tables/nope/instants",
        f'{{"requested_time": "{TS}", "action": "commit"}}',
    ),
    "instant time after lone surrogate": ("POST", f"{R}/instant-times", '{"after": "\\ud800"}'),
    "instant time after not a time": ("POST", f"{R}/instant-times", '{"after": "yesterday"}'),
    "instant time after 40 digits": ("POST", f"{R}/instant-times", json.dumps({"after": "9" * 40})),
    "instant time after NUL": ("POST", f"{R}/instant-times", f'{{"after": "{_NUL}"}}'),
    "transition completion time lone surrogate": (
        "POST",
        f"{R}/instants/{TS}/transition",
        '{"action": "commit", "from_state": "requested", "to_state": "inflight", '
        '"completion_time": "\\ud800"}',
    ),
    "transition action lone surrogate": (
        "POST",
        f"{R}/instants/{TS}/transition",
        '{"action": "\\ud800", "from_state": "requested", "to_state": "inflight"}',
    ),
    "transition state unknown": (
        "POST",
        f"{R}/instants/{TS}/transition",
        '{"action": "commit", "from_state": "requested", "to_state": "done"}',
    ),
    "slices partitions lone surrogate": ("POST", f"{R}/snapshot/slices", '{"partitions": ["\\ud800"]}'),
    "slices partitions NUL": ("POST", f"{R}/snapshot/slices", f'{{"partitions": ["city={_NUL}"]}}'),
    "slices partitions not a list": ("POST", f"{R}/snapshot/slices", '{"partitions": "city=sf"}'),
    "slices as_of lone surrogate": ("POST", f"{R}/snapshot/slices", '{"as_of": "\\ud800"}'),
    "slices as_of a number": ("POST", f"{R}/snapshot/slices", '{"as_of": 20240101000000000}'),
    # --- bodies: not JSON, or not the JSON wanted ---------------------------------------------------
    "body not UTF-8": ("POST", "/v1/databases", b'{"name": "db\xff"}'),
    "body latin-1 in a filter": (
        "POST",
        f"{R}/partitions/query",
        b'{"filter": {"op": "eq", "column": "city", "value": "\xe9"}}',
    ),
    "body truncated JSON": ("POST", "/v1/databases", '{"name": "db9"'),
    "body trailing garbage": ("POST", "/v1/databases", '{"name": "db9"} x'),
    "body a list": ("POST", "/v1/databases", '[{"name": "db9"}]'),
    "body null": ("POST", "/v1/databases", "null"),
    "body empty": ("POST", "/v1/databases", ""),
    "body nested 100k deep": ("POST", f"{R}/partitions/query", "[" * 100_000 + "]" * 100_000),
    "body a huge number": ("POST", "/v1/databases", '{"name": ' + "9" * 5000 + "}"),
}


# Odd but valid requests: answered (2xx), or refused with a typed 4xx; never a 5xx or a redirect.
ODD: dict[str, Case] = {
    "filter value 10**40": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "city", "value": ' + "9" * 40 + "}"),
    ),
    "filter value -10**40 on a number": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "lt", "column": "year", "value": -' + "9" * 40 + "}"),
    ),
    "filter in values 10**40": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "in", "column": "city", "values": [' + "9" * 40 + "]}"),
    ),
    "files of partition not UTF-8": ("GET", f"{R}/snapshot/all-files?partition=%ED%A0%80", None),
    "tables at not UTF-8": ("GET", "/v1/tables?location=%2Fdata%2F%ED%A0%80", None),
    "body a BOM": ("POST", "/v1/databases", b'\xef\xbb\xbf{"name": "db9"}'),
    "body UTF-16": ("POST", "/v1/databases", '{"name": "db9"}'.encode("utf-16")),
    "filter value 10**40 on a number": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "gt", "column": "year", "value": ' + "9" * 40 + "}"),
    ),
    "filter value a bool": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "year", "value": true}'),
    ),
    "filter value U+FFFD": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "city", "value": "\\ufffd"}'),
    ),
    "filter value a pair of surrogates": (
        "POST",
        f"{R}/partitions/query",
        _filter('{"op": "eq", "column": "city", "value": "\\ud83d\\ude00"}'),
    ),
    "database description NaN as text": (
        "POST",
        "/v1/databases",
        '{"name": "db9", "description": "NaN Infinity \\\\u0000"}',
    ),
}


@pytest.fixture
def hostile_api(api: Api) -> Api:
    """db1.t1, partitioned by city (string) and year (int64), with one commit."""
    route = api.table(
        partition_fields=[{"name": "city", "type": "string"}, {"name": "year", "type": "int64"}]
    )
    assert route == R
    ts = api.instant_time(route)
    api.ok(api.commit(route, ts, commit_meta(ts, {"city=sf/year=2020": [("f1", 10)]})))
    api.ok(api.post(f"{route}/partitions/query", {}))  # synced
    return api


def _state(api: Api) -> dict[str, list[tuple[Any, ...]]]:
    with api.engine.connect() as conn:
        return {
            t.name: sorted(tuple(str(v) for v in row) for row in conn.execute(sa.select(t)))
            for t in (S.db, S.db_params, S.tbl, S.tbl_params, S.partitions, S.instant, S.files)
        }


def _send(api: Api, method: str, path: str, body: Any) -> httpx.Response:
    headers = dict(api.auth)
    kwargs: dict[str, Any] = {}
    if isinstance(body, (str, bytes)):
        kwargs["content"] = body.encode("utf-8") if isinstance(body, str) else body
        headers["content-type"] = "application/json"
    return api.client.request(method, path, headers=headers, follow_redirects=False, **kwargs)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_input_answers_a_typed_4xx(hostile_api: Api, case: str) -> None:
    api = hostile_api
    method, path, body = CASES[case]
    before = _state(api)
    r = _send(api, method, path, body)
    assert 400 <= r.status_code < 500, (case, r.status_code, r.headers.get("location"), r.text[:300])
    error = r.json()["error"]
    assert error["code"] in CODES and isinstance(error["message"], str) and error["message"], (case, r.text)
    assert len(r.content) < 4096, case  # the message does not echo a huge input back
    assert _state(api) == before, case


def test_text_a_database_stores_is_kept_the_rest_refused(hostile_api: Api) -> None:
    """Odd but valid requests (numbers past 64 bits, U+FFFD, a surrogate pair, text that reads
    NaN) are answered, or refused with a typed 4xx; text the databases store (control characters
    but NUL, non-BMP characters, right-to-left marks) is stored and matched literally; text they
    cannot store (NUL, a lone surrogate), also inside a commit's metadata, is refused with 400 and
    the table reads on."""
    api = hostile_api
    for case, (method, path, body) in ODD.items():
        r = _send(api, method, path, body)
        assert r.status_code < 300 or (400 <= r.status_code < 500 and r.json()["error"]["code"] in CODES), (
            case,
            r.status_code,
            r.text[:300],
        )
    odd = ["\x01\x7f", "😀", "\ufffd", "\u202eabc", "a\tb\nc", "\U0001d54f" * 50]
    meta = commit_meta(TS, {f"city={v}/year=1": [(f"g{i}", 1)] for i, v in enumerate(odd)})
    api.ok(api.commit(R, TS, meta))
    for v in odd:
        got = api.ok(
            api.post(f"{R}/partitions/query", {"filter": {"op": "eq", "column": "city", "value": v}})
        )
        assert [p["values"]["city"] for p in got] == [v]
    api.ok(
        api.post("/v1/databases", {"name": "db8", "description": "".join(odd), "params": {"😀": "\x01"}}), 201
    )
    assert api.ok(api.get("/v1/databases/db8"))["params"] == {"😀": "\x01"}
    for bad in ("city=\ud800/year=1", "city=a\x00b/year=1"):
        ts = api.instant_time(R)
        api.ok(api.post(f"{R}/instants", {"requested_time": ts, "action": "commit"}), 201)
        api.ok(
            api.post(
                f"{R}/instants/{ts}/transition",
                {"action": "commit", "from_state": "requested", "to_state": "inflight"},
            )
        )
        data = json.dumps(commit_meta(ts, {bad: [("h1", 1)]})).encode()  # JSON escapes: valid bytes
        r = api.post(
            f"{R}/instants/{ts}/transition",
            {
                "action": "commit",
                "from_state": "inflight",
                "to_state": "completed",
                "metadata_b64": b64(data),
            },
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid", (bad, r.text)
        api.ok(api.delete(f"{R}/instants/{ts}"), 204)
    assert len(api.ok(api.post(f"{R}/partitions/query", {}))) == 1 + len(odd)
    r = _send(api, "POST", "/v1/databases", '{"name": "db9", "description": "\\ud800"}')
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid", r.text


def test_completion_metadata_that_is_not_commit_metadata(hostile_api: Api) -> None:
    """A completion whose bytes are not the action's metadata is refused (400), the instant stays
    inflight, and reads go on."""
    api = hostile_api
    for n, data in enumerate(
        [b"\xff\xfe not json", b"[1, 2]", json.dumps({"partitionToWriteStats": 5}).encode()]
    ):
        ts = api.instant_time(R)
        api.ok(
            api.post(f"{R}/instants", {"requested_time": ts, "action": "commit", "metadata_b64": b64(b"")}),
            201,
        )
        api.ok(
            api.post(
                f"{R}/instants/{ts}/transition",
                {"action": "commit", "from_state": "requested", "to_state": "inflight"},
            )
        )
        r = api.post(
            f"{R}/instants/{ts}/transition",
            {
                "action": "commit",
                "from_state": "inflight",
                "to_state": "completed",
                "metadata_b64": b64(data),
            },
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid", (n, r.text)
        states = {i["requested_time"]: i["state"] for i in api.ok(api.get(f"{R}/instants"))}
        assert states[ts] == "inflight"
        assert api.post(f"{R}/partitions/query", {}).status_code == 200
        assert api.post(f"{R}/snapshot/slices", {}).status_code == 200
        api.ok(api.delete(f"{R}/instants/{ts}"), 204)


# --- the client ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"hoodie.metaserver.enabled": "true"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "ftp://h"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://[::1"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://h:99999"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://h:port"},
        {"hoodie.metaserver.enabled": "true", "hoodie.metaserver.uris": "http://h\x00"},
        {
            "hoodie.metaserver.enabled": "true",
            "hoodie.metaserver.uris": "http://h",
            "hoodie.metaserver.token": "a\nb",
        },
        {
            "hoodie.metaserver.enabled": "true",
            "hoodie.metaserver.uris": "http://h",
            "hoodie.metaserver.token": "é\ud800",
        },
    ],
    ids=[
        "no uris",
        "ftp",
        "no host",
        "bad ipv6",
        "port out of range",
        "port not a number",
        "NUL",
        "token newline",
        "token not latin-1",
    ],
)
def test_client_refuses_bad_options(options: dict[str, str]) -> None:
    with pytest.raises(HudiMdError) as e:
        client = MetastoreClient.from_options(options)
        assert client is not None
        client.databases()
    assert isinstance(e.value, (InvalidOptionError, MetastoreError)), repr(e.value)


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_client_failures_are_hudi_md_errors(hostile_api: Api) -> None:
    api = hostile_api
    nowhere = MetastoreClient(f"http://127.0.0.1:{_closed_port()}", timeout_s=2)
    with pytest.raises(MetastoreError) as e:
        nowhere.databases()
    assert e.value.code == "unreachable"
    unknown_host = MetastoreClient("http://no-such-host.invalid", timeout_s=2)
    with pytest.raises(MetastoreError):
        unknown_host.databases()
    transport = api.client._transport  # the in-process server, synchronously
    for token in (None, "nonsense", api.token + "x"):
        client = MetastoreClient("http://ms", token, transport=transport)
        with pytest.raises(MetastoreError) as e:
            client.create_database("db9")
        assert e.value.code == "unauthorized" and (token is None or token not in str(e.value))
    good = MetastoreClient("http://ms", api.token, transport=transport)
    for bad in ("../evil", "..", "", "a/b", "x" * 129, "\ud800", "é"):
        with pytest.raises(InvalidOptionError):
            good.database(bad)
        with pytest.raises(InvalidOptionError):
            good.create_database(bad)
        with pytest.raises(InvalidOptionError):
            good.instants("db1", bad)
    with pytest.raises(MetastoreError) as e:
        good.partitions("db1", "t1", P.Filter(op="eq", column="city", value="\ud800"))
    assert e.value.code == "invalid"
    with pytest.raises(MetastoreError):
        good.drop_partition("db1", "t1", "city=\x00")
    with pytest.raises(MetastoreError):
        good.slices("db1", "t1", ["\ud800"])


def test_a_server_that_is_not_a_metastore(hostile_api: Api) -> None:
    """Answers that are not the protocol's (HTML, a redirect, truncated JSON) are MetastoreErrors."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/databases"):
            return httpx.Response(200, content=b"<html>hello</html>")
        if "redirect" in request.url.path:
            return httpx.Response(307, headers={"location": "http://elsewhere/"})
        return httpx.Response(200, content=b'{"name": "db1", "crea')

    client = MetastoreClient("http://ms", "t", transport=httpx.MockTransport(handler))
    for call in (client.databases, lambda: client.database("db1"), lambda: client.database("redirect")):
        with pytest.raises(MetastoreError):
            call()
