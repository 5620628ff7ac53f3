"""A Python process attached to a running Spark driver JVM through a Py4J server the shim started
in it (``PythonGateway.scala``: Spark's own ``Py4JServer``, loopback, fresh secret), as
``spark-submit app.py`` attaches PySpark.

Two users: the write bridge (:mod:`hudi_md.spark.bridge`, one attach per process) and the planner
(:mod:`hudi_md.spark.plan_engine`, one attach per plan that runs a Spark job, in a process that
lives on). So an attach undoes everything PySpark's ``SparkContext`` set up for it when it ends:
the accumulator server and its thread, the active context, its ``sys.path`` entries, its SIGINT
handler and its temporary directory (:func:`attached_context`), then the connection and PySpark's
process-wide gateway (:func:`disconnect`). The JVM's context and session are never stopped: they
belong to the driver.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark import SparkConf, SparkContext

_ENV_LOCK = threading.Lock()
_GATEWAY_ENV = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")


def connect(port: int, secret: str) -> Any:
    """A Py4J gateway to the server at ``port``: PySpark's ``launch_gateway`` (which imports the
    JVM classes PySpark uses), told where the server is as it reads it, from the environment. It
    launches a JVM when the variables are absent, so they are set for the call, then put back."""
    from pyspark.java_gateway import launch_gateway

    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in _GATEWAY_ENV}
        os.environ["PYSPARK_GATEWAY_PORT"] = str(int(port))
        os.environ["PYSPARK_GATEWAY_SECRET"] = secret
        try:
            return launch_gateway()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class AttachedSparkContext(SparkContext):
    """PySpark's SparkContext around the JVM's running one (``jsc``): its conf is the JVM
    context's, its workers run ``spark.pyspark.python`` (else ``$PYSPARK_PYTHON``, else this
    interpreter), and ``stop`` only stops what this process started (the accumulator server),
    never the JVM's context, which belongs to its driver."""

    def __init__(self, gateway: Any, jsc: Any) -> None:
        conf = SparkConf(_jvm=gateway.jvm, _jconf=jsc.getConf())
        super().__init__(conf=conf, gateway=gateway, jsc=jsc)
        workers = conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
        self.pythonExec = workers

    def stop(self) -> None:
        server = getattr(self, "_accumulatorServer", None)
        if server is not None:
            # pyspark annotates it non-optional, yet its own stop() sets None the same way
            self._accumulatorServer = None  # type: ignore[assignment]
            # socketserver's shutdown waits for its serve loop's next poll (half a second; most
            # of a small write's end): it runs beside, on a daemon thread, not waited for
            threading.Thread(target=server.shutdown, name="hudi-md-accumulators-stop", daemon=True).start()
        with SparkContext._lock:
            if SparkContext._active_spark_context is self:
                SparkContext._active_spark_context = None


def disconnect(gateway: Any) -> None:
    """Shuts ``gateway`` down (its finalizer thread too, which ``close`` leaves running) and makes
    PySpark forget it (its process-wide gateway and JVM handles), so that the next attach starts
    afresh. Errors of the JVM are to be read before: PySpark's exceptions need the JVM to print."""
    try:
        gateway.shutdown()
    finally:
        with SparkContext._lock:
            if SparkContext._gateway is gateway:
                SparkContext._gateway = None
                SparkContext._jvm = None


@contextmanager
def attached_context(gateway: Any, jsc: Any) -> Iterator[AttachedSparkContext]:
    """``jsc`` (the driver's ``JavaSparkContext``) wrapped for the ``with`` block; afterwards this
    process holds nothing of it but the gateway: ``sys.path``, the SIGINT handler and the temporary
    directory are as they were (:func:`disconnect` ends the gateway)."""
    path = list(sys.path)
    handler = (
        signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    )
    sc = AttachedSparkContext(gateway, jsc)
    try:
        yield sc
    finally:
        sc.stop()
        temp_dir = getattr(sc, "_temp_dir", None)
        if temp_dir:  # made by the JVM for this context's files, on the driver's disk
            shutil.rmtree(temp_dir, ignore_errors=True)
        sys.path[:] = path
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def jvm_object(jvm: Any, name: str) -> Any:
    """The JVM object (a Scala ``object``, a class) of a dotted ``name``."""
    target = jvm
    for part in name.split("."):
        target = getattr(target, part)
    return target
