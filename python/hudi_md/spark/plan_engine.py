"""The planner process's engine: the driver's Spark, lent by the shim for one plan
(ARCHITECTURE.md, "Planner protocol").

When Hudi's rule (or the memory budget, :mod:`hudi_md.planning.column_stats_mode`) sends a
``plan``'s column_stats pruning to the engine and the request said the shim can lend one
(``engine: true``: the driver's ``HudiMdFileIndex`` does), the planner asks for it in the middle of
the plan: a ``{"callback": "engine"}`` frame. The shim (``PlanEngine.scala``) starts a Py4J server
in the driver JVM and registers the plan's job: the caller's job group, description, scheduler
pool, SQL execution and tags, plus the tags ``hudi-md-plan`` and ``hudi-md-plan-<id>``; it answers
``{"ok": true, "port", "secret", "job"}`` (or ``ok: false`` and why). The planner attaches
(:mod:`hudi_md.spark.attach`), takes the job's properties on its JVM thread, runs
:class:`~hudi_md.spark.distributed_plan.SparkColumnStats`' job and detaches; the shim stops the
server once the plan's answer is in. One server and one attach per plan: nothing outlives it.

Failures before the job (no server, no PySpark in this interpreter, the connection refused) are
:class:`~hudi_md.errors.EngineUnavailableError`: the planner then reads the stats itself when that
fits its memory budget, and says so in the counters. A job that fails or is cancelled (the query's
group or tags, or the shim when the query's thread is interrupted) is
:class:`~hudi_md.errors.EngineJobError`: the plan fails, it does not fall back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from hudi_md.errors import EngineJobError, EngineUnavailableError, HudiMdError
from hudi_md.planning.column_stats_mode import ColumnStatsRequest
from hudi_md.spark import protocol as P
from hudi_md.table.fs_view import FileSlice

# Asks the shim (a callback frame out, its answer in).
Ask = Callable[[Mapping[str, Any]], Mapping[str, Any]]


class DriverEngine:
    """A :data:`~hudi_md.planning.column_stats_mode.ColumnStatsEngine` on the Spark of the driver
    whose shim sent the request (see the module's docstring)."""

    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    # every plan of this process uses the same driver: equal engines share remembered plans
    def __eq__(self, other: object) -> bool:
        return isinstance(other, DriverEngine)

    def __hash__(self) -> int:
        return hash(DriverEngine)

    def __call__(self, request: ColumnStatsRequest, counters: dict[str, int]) -> list[FileSlice] | None:
        try:  # before the driver starts a server for nothing
            from hudi_md.spark.attach import attached_context, connect, disconnect, jvm_object
        except ImportError as e:
            raise EngineUnavailableError(
                f"no PySpark in the planner's interpreter ({sys.executable}): {e}"
            ) from e
        offer = self._ask({P.CALLBACK: P.CALLBACK_ENGINE})
        if not offer.get(P.OK):
            raise EngineUnavailableError(
                f"the driver lent no Spark: {offer.get(P.MESSAGE) or 'no reason given'}"
            )
        try:
            gateway = connect(int(offer[P.GATEWAY_PORT]), str(offer[P.GATEWAY_SECRET]))
        except Exception as e:  # a PySpark the JVM does not speak, the connection refused, ...
            raise EngineUnavailableError(f"cannot attach to the driver's JVM: {type(e).__name__}: {e}") from e
        try:
            try:
                job = jvm_object(gateway.jvm, P.ENGINE_CLASS).job(str(offer[P.ENGINE_JOB]))
                if job is None:
                    raise LookupError(f"no plan job {offer[P.ENGINE_JOB]} in the driver JVM")
                context = attached_context(gateway, job.javaSparkContext())
                sc = context.__enter__()
            except Exception as e:
                raise EngineUnavailableError(
                    f"cannot use the driver's SparkContext: {type(e).__name__}: {e}"
                ) from e
            try:
                job.attached()  # the caller's job group, description and tags on this thread
                return _run(sc, request, counters)
            finally:
                context.__exit__(None, None, None)
        finally:
            disconnect(gateway)


def _run(sc: Any, request: ColumnStatsRequest, counters: dict[str, int]) -> list[FileSlice] | None:
    """The job, its failures typed (the planner answers a HudiMdError and serves on)."""
    from py4j.protocol import Py4JError

    from hudi_md.spark.distributed_plan import SparkColumnStats

    try:
        return SparkColumnStats(sc)(request, counters)
    except HudiMdError:
        raise
    except Py4JError as e:
        reason = _first_line(e)
        raise EngineJobError(
            f"the column_stats job of {request.table.uri} failed: {reason}",
            cancelled="cancelled" in reason.lower(),
        ) from e
    except Exception as e:  # an executor's error rebuilt on the driver (ExecutorError)
        raise EngineJobError(
            f"the column_stats job of {request.table.uri} failed: {type(e).__name__}: {e}"
        ) from e


def _first_line(e: BaseException) -> str:
    """Spark's reason without the JVM stack trace."""
    java = getattr(e, "java_exception", None)
    text = str(java.toString()) if java is not None else str(e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__
