"""Tables with Apache Hudi features hudi-md's writer does not maintain are refused, not
written stale, until the index is dropped (`hudi-md metadata drop-index`): a secondary index
that hudi-md's commit did not update made Hudi's SQL query miss the new row (``WHERE name =
'zz'`` returned nothing after hudi-md upserted it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.hudi_md_writes

OPTS = {
    "hoodie.table.name": "sidx",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.metadata.record.index.enable": "true",
}
IN_PROCESS_LOCK = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
ROW = pa.table({"id": ["3"], "name": ["zz"], "price": [3.5], "ts": [2]})


@pytest.mark.ci
def test_a_table_with_a_secondary_index_is_refused(spark: Any, tables_root: Path) -> None:
    import hudi_md
    from hudi_md.errors import UnsupportedFeatureError

    path = tables_root / "secondary-index"
    spark.sql(
        "CREATE TABLE sidx (id string, name string, price double, ts long) USING hudi "
        "TBLPROPERTIES (primaryKey='id', preCombineField='ts', type='cow', "
        f"'hoodie.metadata.record.index.enable'='true') LOCATION '{path}'"
    )
    try:
        spark.sql("INSERT INTO sidx VALUES ('1','a',1.5,1),('2','b',2.5,1)")
        spark.sql(f"SET hoodie.write.lock.provider={IN_PROCESS_LOCK}")
        spark.sql("CREATE INDEX idx_name ON sidx (name)")
        spark.sql("RESET hoodie.write.lock.provider")
        before = sorted(path.rglob("*"))
        with pytest.raises(UnsupportedFeatureError, match="secondary_index_idx_name"):
            hudi_md.write(ROW, str(path), operation="upsert", options=OPTS)
        assert sorted(path.rglob("*")) == before  # nothing written
        # With the index dropped (as Hudi's DROP INDEX would) the write is safe.
        from hudi_md.metadata.lifecycle import drop_indexes
        from hudi_md.storage import Storage

        drop_indexes(Storage(str(path)), ["secondary_index_idx_name"])
        hudi_md.write(ROW, str(path), operation="upsert", options=OPTS)
        spark.sql("REFRESH TABLE sidx")
        assert [tuple(r) for r in spark.sql("SELECT id, name FROM sidx WHERE name = 'zz'").collect()] == [
            ("3", "zz")
        ]
    finally:
        spark.sql("DROP TABLE IF EXISTS sidx")
