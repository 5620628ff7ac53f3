"""The Python side of a write through Spark's own API (``df.write.format("hudi-md")``, SQL
``INSERT`` / ``DELETE`` on a ``hudi-md`` table), whatever the driver is: PySpark, a JVM
application, the ``spark-sql`` command line.

The shim (``WriteBridge.scala``) starts ``python -m hudi_md.spark.bridge`` on the driver's machine
ahead of the write it will serve (after a write, the next write's process is started, so that its
imports are done when that write comes). The process imports what a write needs, then reads its
assignment from stdin: one JSON line with a Py4J server of the driver JVM to attach to (port and
secret, as ``spark-submit app.py`` attaches PySpark) and the job's id. End of input before it
means the JVM no longer needs the process: it exits. Then it wraps the JVM's running
SparkContext, SparkSession and the DataFrame to write (it starts and stops none of them) and runs
:func:`hudi_md.spark.writer.write_dataframe`: the executors do exactly what ``hudi_md.write(df)``
has them do, and this process runs the commit protocol as the driver of that write. The outcome
goes back to the JVM job: the instant, or the error's Python type and message. One process serves
one write.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from collections.abc import Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any

from hudi_md.spark import protocol as P
from hudi_md.spark.attach import attached_context, jvm_object

if TYPE_CHECKING:
    from hudi_md.write.result import WriteResult

log = logging.getLogger(__name__)


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    if sys.stdin is None or sys.stdin.isatty():
        print(f"{P.BRIDGE_MODULE} is started by the hudi-md Spark shim, not by hand", file=sys.stderr)
        return 2
    # A cancelled write (or a process the JVM no longer needs) is stopped with SIGTERM: unwind, so
    # the writer abandons its instant.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        _import_the_write()
        line = sys.stdin.readline()
    except KeyboardInterrupt:  # stopped before it was given a write
        return 0
    if not line:
        return 0  # the JVM went away, or stopped the process it had started ahead
    try:
        assignment = json.loads(line)
        port, secret, job_id = (assignment[k] for k in (P.BRIDGE_PORT, P.BRIDGE_SECRET, P.BRIDGE_JOB))
    except (ValueError, KeyError, TypeError) as e:
        print(f"{P.BRIDGE_MODULE}: bad assignment from the shim ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    # read by pyspark's launch_gateway, as when spark-submit starts a Python application
    os.environ["PYSPARK_GATEWAY_PORT"] = str(port)
    os.environ["PYSPARK_GATEWAY_SECRET"] = str(secret)
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()
    try:
        _warn_in_driver_log(gateway)
        job = jvm_object(gateway.jvm, P.BRIDGE_CLASS).job(job_id)
        if job is None:
            print(f"no hudi-md write job {job_id} in the driver JVM", file=sys.stderr)
            return 2
        try:
            instant = run(gateway, job)
        except BaseException as e:  # every failure goes to the JVM, typed
            traceback.print_exc()
            job.failed(type(e).__name__, str(e) or repr(e))
            return 1
        job.succeeded(None if instant is None else str(instant))  # the JVM takes the instant string
        return 0
    finally:
        gateway.close()


def _warn_in_driver_log(gateway: Any) -> None:
    """Send the write's unknown-option warnings (:func:`hudi_md.config.check_options`) to the
    driver's log at WARN as well: the shim copies this process's stderr into that log at INFO,
    which Spark's shells do not show (their level is WARN)."""
    from hudi_md.config.unknown import add_reporter

    logger = gateway.jvm.org.slf4j.LoggerFactory.getLogger("hudi_md")
    add_reporter(lambda message: logger.warn(f"hudi-md: {message}"))


def _import_the_write() -> None:
    """The modules a write runs (~1 s of imports), loaded while the process waits for its write."""
    import pyspark.java_gateway
    import pyspark.sql  # noqa: F401

    import hudi_md.api
    import hudi_md.spark.write_request
    import hudi_md.spark.writer  # noqa: F401


def run(gateway: Any, job: Any) -> WriteResult | None:
    """The write of ``job``: its request resolved against the table, then written by
    ``write_dataframe`` on the JVM's session. Returns what the commit recorded (None: nothing
    written)."""
    from pyspark.sql import DataFrame, SparkSession

    from hudi_md.api import open_table
    from hudi_md.spark.reader import session_s3a_conf
    from hudi_md.spark.write_request import WriteRequest, resolve
    from hudi_md.spark.writer import write_dataframe
    from hudi_md.storage import Storage
    from hudi_md.storage.hadoop_s3a import is_s3_path, s3a_storage_options
    from hudi_md.table.config import PROPERTIES_FILE

    with attached_context(gateway, job.javaSparkContext()) as sc:
        spark = SparkSession(sc, jsparkSession=job.sparkSession())
        job.attached()  # the caller's job tags on this thread; the JVM's default session restored
        request = WriteRequest.from_json(job.request())
        # the session's S3A settings (spark.hadoop.fs.s3a.*, per bucket too) reach the table as
        # they reach Spark's own writers; write_dataframe maps them again for the write itself
        hadoop = session_s3a_conf(spark) if is_s3_path(request.path) else {}
        table_options = s3a_storage_options(request.path, request.options, hadoop)
        storage_options = {k: v for k, v in table_options.items() if not k.startswith("hoodie.")}
        exists = Storage(request.path, storage_options).exists(PROPERTIES_FILE)
        table = open_table(request.path, table_options).state if exists else None
        resolved = resolve(request, table)
        if resolved.operation is None:
            return None
        df = DataFrame(job.dataFrame(), spark)
        try:
            return write_dataframe(df, request.path, operation=resolved.operation, options=resolved.options)
        except BaseException:
            roll_back_failed_writes(request.path, s3a_storage_options(request.path, resolved.options, hadoop))
            raise


def roll_back_failed_writes(path: str, options: Mapping[str, str]) -> None:
    """What a failed write left pending (its instant, whose heartbeat it deleted), rolled back at
    once under the table lock, as the next writer's recovery would: readers and the next write find
    the timeline clean. Best effort: a failure here is logged, the write's own error stands."""
    from hudi_md.write.writer import HudiWriter

    try:
        writer = HudiWriter(path, options)
        config = writer.config()
        if config is None or not writer.other_pending_writes(None):
            return
        lock = writer.lock()
        lock.acquire()
        try:
            with lock.nesting():
                done = writer.rollback_failed_writes(config)
        finally:
            lock.release()
        log.warning("rolled back what the failed write left pending: %s", ", ".join(done) or "nothing")
    except Exception as e:  # the write's own error is the one to report
        log.warning("could not roll back the failed write's instant (the next write will): %s", e)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    sys.exit(main())
