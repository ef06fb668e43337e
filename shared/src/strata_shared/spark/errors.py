"""What went wrong with a Spark job, in one line a person can act on, and the HTTP problem it becomes.

A job that fails inside a Python worker comes back as a PySpark exception whose message is a worker traceback
(the cause is its last line: `ModuleNotFoundError: No module named 'x'`); one that fails in the JVM carries an
error class and a message; an unreachable server surfaces as a gRPC UNAVAILABLE (also once the client's retries
are spent) or as our own ConnectionError from a reachability check. Queries answer 502 for the first two and 503
for the last, and job queues record the same line as the failure reason.
"""

from __future__ import annotations

import re

from pyspark.errors import PySparkException

from strata_shared.errors import StrataError, Unavailable

# The last unindented "module.Name: message" line of a Python traceback is the exception that ended it.
_PYTHON_CAUSE = re.compile(r"^((?:[a-z_]\w*\.)*[A-Z]\w*): (.*)$")
_DETAIL_LIMIT = 4000


class SparkJobFailed(StrataError):
    """502: Spark ran the job and it failed (executors lack something, a task died, the plan was refused)."""

    status, slug, title = 502, "spark-job-failed", "Spark job failed"


def _is_unreachable(exc: BaseException) -> bool:
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    # The client re-raises the last error once its retries are spent, so this is what it looks like then too.
    if isinstance(exc, ConnectionError):
        return True
    if isinstance(exc, SparkConnectGrpcException):
        return exc.getGrpcStatusCode().name in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    try:
        import grpc
    except ImportError:  # pragma: no cover - pyspark[connect] brings grpc
        return False
    return isinstance(exc, grpc.RpcError) and getattr(exc, "code", lambda: None)() in (
        grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def spark_failure_cause(exc: BaseException) -> str:
    """One line naming why a Spark job failed: the Python exception that ended a worker, else the first line of
    Spark's message, prefixed with its error class when it has one."""
    text = str(exc).strip()
    causes = [match for line in text.splitlines() if (match := _PYTHON_CAUSE.match(line.rstrip()))]
    if causes:
        name, message = causes[-1].groups()
        return f"{name.rsplit('.', 1)[-1]}: {message.strip()}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    error_class = exc.getCondition() if isinstance(exc, PySparkException) else None
    if error_class and error_class not in first:
        first = f"[{error_class}] {first}"
    return first or type(exc).__name__


def failure_reason(exc: BaseException) -> str:
    """A job's recorded failure: the one-line cause, then the whole message for whoever digs further."""
    if not isinstance(exc, PySparkException) and not _is_unreachable(exc):
        return f"{type(exc).__name__}: {exc}"[:_DETAIL_LIMIT]
    prefix = "spark unreachable" if _is_unreachable(exc) else "spark job failed"
    return f"{prefix}: {spark_failure_cause(exc)}\n{type(exc).__name__}: {exc}"[:_DETAIL_LIMIT]


def spark_problem(exc: BaseException, remote: str) -> StrataError | None:
    """The problem a failed Spark call answers with (503 unreachable, 502 failed job), or None when `exc` did
    not come from Spark at all (a bug of ours, which stays a 500)."""
    if _is_unreachable(exc):
        return Unavailable(f"spark connect {remote} unreachable: {spark_failure_cause(exc)}")
    if isinstance(exc, PySparkException):
        return SparkJobFailed(f"spark job failed on {remote}: {spark_failure_cause(exc)}")
    return None
