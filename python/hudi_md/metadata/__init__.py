"""The metadata table (MDT): keys and shard routing, records, reader, writer, lifecycle."""

from hudi_md.metadata.reader import MetadataTable, load_table_state, open_metadata_table

__all__ = ["MetadataTable", "load_table_state", "open_metadata_table"]
