"""Writing Hudi tables (table version 9) with the metadata table kept in step: the commit
protocol (writer, transaction), tagging, file writing, rollback and restore, recovery, table
services, archival, locks and heartbeats. The entry point is :func:`hudi_md.write`."""
