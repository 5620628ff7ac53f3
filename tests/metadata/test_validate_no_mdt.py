"""`metadata validate` answers on a table without a metadata table (issue 11)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

import hudi_md
from hudi_md.cli import main
from hudi_md.metadata.validate import validate_metadata_table

ROWS = pa.table({"id": ["a", "b"], "ts": [1, 2], "zone": ["x", "y"]})


def _opts(**extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "zone",
        **extra,
    }


def test_validate_answers_without_a_metadata_table(tmp_path: Path) -> None:
    """A table without an MDT (the first writer died before creating it, or it is turned off) gets
    an answer from validate, not a traceback."""
    path = str(tmp_path / "t")
    hudi_md.write(ROWS, path, operation="insert", options=_opts(**{"hoodie.metadata.enable": "false"}))
    diffs = validate_metadata_table(hudi_md.open_table(path, {"hoodie.metadata.enable": "true"}))
    assert [d.kind for d in diffs] == ["metadata_table_missing"]
    result = CliRunner().invoke(main, ["metadata", "validate", path])
    assert result.exit_code == 1, result.output
    assert "no readable metadata table" in result.output
