"""What the suite found: hudi-md bugs (their tests are ``xfail(strict=True)`` with these reasons, so the
suite stays green while they exist and turns red when one is fixed without updating this file) and
Apache Hudi quirks (behaviour of Hudi itself, documented with the evidence the suite shows).

Each reason names the table, the operation, what Hudi says, what hudi-md says and the hudi-md source
involved. ``README.md`` beside this file lists them with a reproduction.
"""

from __future__ import annotations

# --- hudi-md bugs ------------------------------------------------------------------------------------

INDEX_DEFS = (
    "hudi-md bug [index-defs]: hudi-md writes .hoodie/.index_defs/index.json with column_stats "
    '"sourceFields": [] although its column_stats partition indexes every column '
    "(_hoodie_commit_time, _hoodie_partition_path, _hoodie_record_key and all data columns); Apache Hudi "
    "1.2 lists the indexed columns there (and rewrites the file when it commits onto the table). Cause: "
    "hudi_md/metadata/lifecycle.py initialize_partitions() takes the columns from the table schema only "
    "when the table already has data, and hudi-md creates the MDT before the first commit."
)
NONPART_RLI_PARTITION = (
    "hudi-md bug [nonpart-rli]: in a non-partitioned table hudi-md writes record_index entries with "
    'recordIndexMetadata.partitionName "." (hudi_md/metadata/records_builder.py record_index_record, '
    'K.partition_id); Apache Hudi 1.2 writes "" there, so Hudi\'s record-index lookups '
    "(HoodieTableMetadata.readRecordIndexLocationsWithKeys, getLocationFromRecordIndexInfo) return "
    'partition "." for every hudi-md-written key while the snapshot says "": the validator\'s '
    "record-index content check fails for every key."
)
RLI_AFTER_OVERWRITE = (
    "hudi-md bug [rli-overwrite]: insert_overwrite leaves the record_index entries of every key of the "
    "replaced file groups (they point at the replaced file group; e.g. 83 entries for 18 keys in the "
    "table); Apache Hudi 1.2 deletes them in the replacecommit's MDT deltacommit (its record index has "
    "exactly the snapshot's keys). Cause: hudi_md/write/writer.py mdt_records_for_commit emits "
    "record-index deletes only for the written files' deleted_keys, nothing for replaced file groups."
)
CLEAN_OPERATION_TYPE = (
    "hudi-md bug [clean-optype]: the MDT deltacommit hudi-md writes for a data-table clean carries "
    'HoodieCommitMetadata.operationType "CLEAN" (hudi_md/write/services.py _clean_in_mdt, '
    'operation="CLEAN"; writer.py rollback uses "ROLLBACK" the same way), which is not a '
    "WriteOperationType: Apache Hudi 1.2 fails to read that instant (InvalidFormatException: Cannot "
    'deserialize WriteOperationType from String "CLEAN"), so it cannot load the MDT as a table '
    '(spark.read.format("hudi").load(<table>/.hoodie/metadata), as the validator does) nor write to '
    "the data table any more (HoodieIOException: Unable to read metadata for instant ...deltacommit). "
    "Hudi writes UPSERT_PREPPED for that deltacommit."
)
CLEAN_BLOCKS_HUDI = (
    "blocked by hudi-md bug [clean-optype]: Apache Hudi's upsert onto this table (after hudi-md's "
    'clean) fails: HoodieIOException "Unable to read metadata for instant <clean>__deltacommit" '
    '(operationType "CLEAN" in the MDT deltacommit hudi-md wrote for its clean)'
)
PARTITION_STATS_LOOSE = (
    "hudi-md bug [partition-stats]: on a commit that rewrites files (COW upsert/delete, insert_overwrite, "
    "compaction) hudi-md merges the new files' ranges into the partition's partition_stats record "
    "(isTightBound=false; value_count/null_count/total sizes summed over every file version ever "
    "written, min/max never shrink) instead of recomputing it from the partition's latest file slices "
    "as Apache Hudi 1.2 does (isTightBound=true). The bounds stay sound (they cover every live value), "
    "but HoodieMetadataTableValidator --validate-partition-stats compares each record with the merge "
    "of the latest slices' column stats and fails. Cause: hudi_md/write/writer.py mdt_records_for_commit "
    "(merge_ranges over this commit's files only)."
)
SPARK_WRITER_STALE_RLI = (
    "hudi-md bug [spark-stale-rli]: hudi_md.write(<pyspark DataFrame>, operation='upsert') tags a key "
    "with its record-index file group without checking that the group is still live "
    "(hudi_md/spark/writer.py _lookup_record_index / write_dataframe): after insert_overwrite left "
    "stale entries [rli-overwrite], upserted keys k030, k033, k036, k039 (partition sf) are written as "
    "a new slice of the *replaced* file group and are lost for every reader (hudi-md, Hudi with and "
    "without the MDT). The pyarrow path (write.tagging.existing_locations) filters by latest slices and "
    "is not affected."
)
COMPLEX_KEY_ENCODING = (
    "hudi-md bug [complex-key]: with ComplexKeyGenerator and a single record-key field (two partition "
    "fields), hudi-md writes _hoodie_record_key 'k001' (hudi_md/write/keygen.py record_keys: field name "
    "only for several key fields); Apache Hudi 1.2 writes 'id:k001' for table version 9 "
    "(hoodie.write.complex.keygen.new.encoding applies to version 8 and below only). Mixed writers: "
    "Hudi's upsert of k000..k005 onto a hudi-md table inserts 'id:k00x' beside 'k00x' — 6 duplicate "
    "ids — and hudi-md's later upsert updates its own copies only."
)

# --- Apache Hudi quirks -------------------------------------------------------------------------------

HUDI_PARTITION_STATS_AFTER_REPLACE = (
    "Apache Hudi 1.2 quirk (not hudi-md): right after a replacecommit (insert_overwrite, clustering) "
    "Hudi's own partition_stats still count the replaced file groups (e.g. cow-one 'sf' after "
    "insert_overwrite: value_count 28 = 22 old + 6 new rows; after clustering every partition doubles, "
    "44 = 22 + 22) while isTightBound=true; the next regular commit recomputes them. The validator's "
    "--validate-partition-stats check therefore fails on Hudi's own table at those steps."
)


def hudi_md_writes_expected_failure(layout_id: str, via: str, plan: str, step: str, check: str) -> str | None:
    """Why (workload, step, check) of the hudi-md-writes suite fails today, or None.

    Every hudi-md bug above is fixed ([clean-optype], [nonpart-rli] in the first round; [index-defs],
    [rli-overwrite], [partition-stats], [spark-stale-rli], [complex-key] in the second); their reasons
    stay above as the record of what the suite found. A new bug gets a reason and a predicate here.
    """
    del layout_id, via, plan, step, check
    return None


def hudi_writes_expected_failure(layout_id: str, step: str, check: str) -> str | None:
    """Why (layout, step, check) of the Hudi-writes suite fails today, or None."""
    replace = step in ("insert_overwrite", "clustering")
    if check == "validator" and not layout_id.endswith("nonpart") and replace:
        return HUDI_PARTITION_STATS_AFTER_REPLACE
    return None
