"""The Hive metastore (Thrift) adapter: enough of Hive's metastore API that Hive-family clients
(Spark's built-in Hive 2.3 client among them) see hudi-md tables, as data-source tables with
provider ``hudi-md``.

* ``handler`` (the calls, answered from the database through the server's services),
* ``tables`` (tables and partitions as Hive's objects), ``filters`` (Hive's partition filter
  strings as the server's filters), ``server`` (the Thrift endpoint).

Needs the ``hms`` extra (``thrift`` and ``hmsclient``, which ships the Python generated from
Hive's ``hive_metastore.thrift``).
"""
