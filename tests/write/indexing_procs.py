"""Writer, indexer and table-service processes for the async indexing tests
(tests/write/test_indexing_races.py): each command runs in its own Python process, so the tests
have real concurrent writers; a barrier lets the test stop one at a chosen step, start others, then
let it go on or SIGKILL it.

    python indexing_procs.py SPEC_JSON

SPEC_JSON: ``{"cmd": "write"|"index"|"clean"|"compact", "path": ..., "options": {...},
"operation", "ids": [start, end], "ts", "seed", "pause": {"dir", "name", "at"}, "timeout_s"}``.
``pause.at``: ``before_commit`` (a writer's data files are written, before its commit; no lock
held), ``before_complete`` (its MDT deltacommit is written, under the commit lock), ``build``
(the indexer listed the table, before it reads a file). At the pause the process creates
``<dir>/<name>.ready`` and waits for ``<dir>/<name>.go``.

Prints one JSON line: ``{"ok": true, "instant": ...}`` or ``{"ok": false, "error": <type>,
"message": ...}``.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

BARRIER_TIMEOUT_S = 180.0


def pause(spec: dict[str, Any]) -> None:
    folder = Path(spec["dir"])
    (folder / f"{spec['name']}.ready").write_text(str(time.time()))
    go = folder / f"{spec['name']}.go"
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {spec['name']} never released")
        time.sleep(0.02)


def install_pause(spec: dict[str, Any] | None) -> None:
    if not spec:
        return
    at = spec["at"]
    if at == "before_commit":
        from hudi_md.write.writer import HudiWriter

        real_finish = HudiWriter.finish_commit

        def finish_commit(self: Any, *args: Any, **kwargs: Any) -> Any:
            pause(spec)
            return real_finish(self, *args, **kwargs)

        HudiWriter.finish_commit = finish_commit  # type: ignore[method-assign]
    elif at == "before_complete":
        from hudi_md.write.transaction import Transaction

        real_complete = Transaction.complete

        def complete(self: Any, *args: Any, **kwargs: Any) -> Any:
            pause(spec)
            return real_complete(self, *args, **kwargs)

        Transaction.complete = complete  # type: ignore[method-assign]
    elif at == "build":
        from hudi_md.metadata.lifecycle import PartitionBuilder

        real_records = PartitionBuilder.records_of
        paused = []

        def records_of(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not paused:
                paused.append(True)
                pause(spec)
            return real_records(self, *args, **kwargs)

        PartitionBuilder.records_of = records_of  # type: ignore[method-assign]
    else:
        raise ValueError(f"unknown pause point {at!r}")


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from hudi_md.write.writer import HudiWriter

    install_pause(spec.get("pause"))
    cmd, path, options = spec["cmd"], spec["path"], spec.get("options", {})
    if cmd == "write":
        from table_model import rows

        start, end = spec["ids"]
        data = rows(range(start, end), spec["ts"], spec.get("seed", 0))
        if spec.get("keep_ids") is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            data = data.filter(pc.is_in(data.column("id"), pa.array(spec["keep_ids"], pa.string())))
        return {"instant": HudiWriter(path, options).write(data, spec["operation"]).instant}
    if cmd == "random":
        # a writer making ops one after another; a write that fails with a typed error (a
        # conflict) is not applied; returns the indexes of the ops that committed
        from hudi_md.errors import HudiMdError
        from table_model import rows

        committed = []
        for n, op in enumerate(spec["ops"]):
            time.sleep(op.get("sleep", 0))
            data = rows(range(*op["ids"]), op["ts"], op["seed"])
            try:
                HudiWriter(path, options).write(data, op["operation"])
            except HudiMdError:
                continue
            committed.append(n)
        return {"instant": None, "committed": committed}
    if cmd == "index":
        from hudi_md.write.indexing import run_indexing

        return {"instant": run_indexing(HudiWriter(path, options), timeout_s=spec.get("timeout_s"))}
    if cmd == "clean":
        from hudi_md.table.config import TableConfig
        from hudi_md.write import services
        from hudi_md.write.config import WriteConfig

        w = HudiWriter(path, options)
        return {
            "instant": services.clean(w, WriteConfig.from_options(w.options, TableConfig.load(w.storage)))
        }
    if cmd == "compact":
        from hudi_md.write import services

        return {"instant": services.compact(HudiWriter(path, options))}
    raise ValueError(f"unknown command {cmd!r}")


def main() -> int:
    import logging

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    spec = json.loads(sys.argv[1])
    try:
        out = {"ok": True, **run(spec)}
    except Exception as e:  # reported to the test, which asserts on the type
        out = {"ok": False, "error": type(e).__name__, "message": str(e), "trace": traceback.format_exc()}
    print(json.dumps(out), flush=True)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
