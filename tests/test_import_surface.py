"""What ``import hudi_md`` costs and still gives: the top-level package imports the read API and
the write entry points on first use, so a bare import loads neither the write side, nor pandas,
nor PySpark; every public name still resolves, and a write and read back work. Each check runs in a
fresh interpreter, as this one has imported everything already. No timings here:
benchmarks/import_time_bench.py measures them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"

# Makes an import of pandas or PySpark fail, as in an environment without them (the core install).
BLOCK_OPTIONAL = textwrap.dedent(
    """
    import sys

    class _Blocked:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pandas", "pyspark"):
                raise ImportError(f"{name} is blocked: the core install has no such package")
            return None

    sys.meta_path.insert(0, _Blocked())
    """
)

ROUND_TRIP = textwrap.dedent(
    """
    import pyarrow as pa

    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    data = pa.table({"id": ["a", "b", "c"], "ts": [1, 2, 3], "v": [1.5, 2.5, 3.5]})
    hudi_md.write(data, PATH, options=options)
    read = hudi_md.open_table(PATH).read()
    out["rows"] = read.num_rows
    out["ids"] = sorted(read.column("id").to_pylist())
    """
)


def _run(code: str) -> dict[str, Any]:
    """Runs ``code`` in a fresh interpreter; it fills the dict ``out``, returned."""
    script = f"import json\nout = {{}}\n{code}\nprint(json.dumps(out))\n"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    if proc.returncode != 0:
        pytest.fail(f"subprocess failed ({proc.returncode}):\n{proc.stderr[-4000:]}", pytrace=False)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_loads_neither_the_write_side_nor_pandas_nor_pyspark() -> None:
    out = _run(
        textwrap.dedent(
            """
            import sys
            import hudi_md
            out["modules"] = sorted(sys.modules)
            """
        )
    )
    modules = set(out["modules"])
    assert "pandas" not in modules
    assert "pyspark" not in modules
    assert sorted(m for m in modules if m == "hudi_md.write" or m.startswith("hudi_md.write.")) == []
    assert "hudi_md.entry" not in modules


def test_every_public_name_resolves() -> None:
    out = _run(
        textwrap.dedent(
            """
            import hudi_md
            import hudi_md.entry
            import hudi_md.api
            out["all"] = list(hudi_md.__all__)
            out["missing"] = [n for n in hudi_md.__all__ if not hasattr(hudi_md, n)]
            out["not_in_dir"] = sorted(set(hudi_md.__all__) - set(dir(hudi_md)))
            out["write_is_entry_write"] = hudi_md.write is hudi_md.entry.write
            out["open_table_is_api"] = hudi_md.open_table is hudi_md.api.open_table
            out["table_is_api"] = hudi_md.Table is hudi_md.api.Table
            out["errors"] = issubclass(hudi_md.TableNotFoundError, hudi_md.HudiMdError)
            from hudi_md import run_indexing, write
            out["from_import"] = write is hudi_md.entry.write and callable(run_indexing)
            try:
                hudi_md.no_such_name
            except AttributeError:
                out["unknown"] = "AttributeError"
            """
        )
    )
    assert {"write", "open_table", "Table", "HudiMdError", "__version__"} <= set(out["all"])
    assert out["missing"] == []
    assert out["not_in_dir"] == []
    assert out["write_is_entry_write"]
    assert out["open_table_is_api"]
    assert out["table_is_api"]
    assert out["errors"]
    assert out["from_import"]
    assert out["unknown"] == "AttributeError"


@pytest.mark.parametrize("first", ["subpackage", "function"])
def test_write_stays_the_function_when_the_write_subpackage_is_imported(first: str) -> None:
    # the subpackage hudi_md.write shares the function's name; importing it, before or after the
    # function is first looked up, must not rebind hudi_md.write to the module
    order = (
        "import hudi_md.write.writer\nf = hudi_md.write\n"
        if first == "subpackage"
        else "f = hudi_md.write\nimport hudi_md.write.writer\n"
    )
    out = _run(
        "import hudi_md\nimport hudi_md.entry\n"
        + order
        + textwrap.dedent(
            """
            import sys, types
            out["function"] = f is hudi_md.entry.write and hudi_md.write is hudi_md.entry.write
            out["subpackage"] = isinstance(sys.modules["hudi_md.write"], types.ModuleType)
            from hudi_md.write.writer import HudiWriter
            out["writer"] = HudiWriter.__module__
            """
        )
    )
    assert out == {"function": True, "subpackage": True, "writer": "hudi_md.write.writer"}


def test_round_trip_after_a_bare_import(tmp_path: Path) -> None:
    out = _run(f"import hudi_md\nPATH = {str(tmp_path / 't')!r}\n{ROUND_TRIP}")
    assert out == {"rows": 3, "ids": ["a", "b", "c"]}


def test_round_trip_without_pandas_or_pyspark(tmp_path: Path) -> None:
    # the core install (`pip install hudi-md`, no extras) has neither
    out = _run(
        f"{BLOCK_OPTIONAL}\nimport hudi_md\nPATH = {str(tmp_path / 't')!r}\n{ROUND_TRIP}\n"
        'out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in ("pandas", "pyspark"))\n'
    )
    assert out == {"rows": 3, "ids": ["a", "b", "c"], "loaded": []}
