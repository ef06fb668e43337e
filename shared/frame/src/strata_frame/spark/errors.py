"""What went wrong with a Spark job, in one line a person can act on, and the HTTP problem it becomes.

A job that fails inside a Python worker comes back as a PySpark exception whose message is a worker traceback
(the cause is its last line: `ModuleNotFoundError: No module named 'x'`); one that fails in the JVM carries an
error class, a SQLSTATE and a message; an unreachable server surfaces as a gRPC UNAVAILABLE (also once the client's
retries are spent) or as our own ConnectionError from a reachability check. A query whose data or SQL Spark refuses
(SQLSTATE class 22, a data exception: an overflow, a bad cast, a division by zero; class 42, a statement Spark
cannot analyse) is the client's to fix, as on the local engine; any other failure of a job answers 502 and an
unreachable server 503; job queues record the same line as the failure reason.

What a client reads names the cause in plain words and nothing of the deployment: no Spark Connect address, no
JVM stack, no advice to change Spark's configuration; the whole message goes to the log.
"""

from __future__ import annotations

import logging
import re

from strata_core.errors import StrataError, Unavailable
from strata_frame.spark.pyspark_imports import pyspark_module

PySparkException = pyspark_module("pyspark.errors").PySparkException

log = logging.getLogger("strata.spark")

# The last unindented "module.Name: message" line of a Python traceback is the exception that ended it.
_PYTHON_CAUSE = re.compile(r"^((?:[a-z_]\w*\.)*[A-Z]\w*): (.*)$")
_DETAIL_LIMIT = 4000
# SQLSTATE classes of errors in what the query asked for, not in Spark: data exceptions (22) and statements
# Spark cannot analyse (42).
_QUERY_SQLSTATE_CLASSES = ("22", "42")
# Spark's advice to turn ANSI mode off, and the SQLSTATE suffix: neither is anything a client can act on.
_SPARK_ADVICE = re.compile(r"\s*If necessary set \"[^\"]*\" to \"[^\"]*\"[^.]*\.|\s*SQLSTATE: \w+\.?")


class SparkJobFailed(StrataError):
    """502: Spark ran the job and it failed (executors lack something, a task died, the plan was refused)."""

    status, slug, title = 502, "spark-job-failed", "Spark job failed"


def _is_unreachable(exc: BaseException) -> bool:
    SparkConnectGrpcException = pyspark_module("pyspark.errors.exceptions.connect").SparkConnectGrpcException  # noqa: N806
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


def query_error_cause(exc: BaseException) -> str | None:
    """The one line a client reads when Spark refused the query's data or its SQL (SQLSTATE class 22 or 42:
    `[ARITHMETIC_OVERFLOW] long overflow. Use 'try_add' ...`), None for any other failure."""
    if not isinstance(exc, PySparkException):
        return None
    state = exc.getSqlState() or ""
    if not state.startswith(_QUERY_SQLSTATE_CLASSES):
        return None
    return _SPARK_ADVICE.sub("", spark_failure_cause(exc)).strip()


def spark_problem(exc: BaseException) -> StrataError | None:
    """The problem a failed Spark call answers with (503 unreachable, 502 failed job), or None when `exc` did
    not come from Spark at all (a bug of ours, which stays a 500). The full message is logged, never answered."""
    if _is_unreachable(exc):
        log.warning("spark connect unreachable: %s", exc)
        return Unavailable(f"the Spark engine is unreachable: {_unreachable_reason(exc)}")
    if isinstance(exc, PySparkException):
        log.warning("spark job failed: %s", exc)
        return SparkJobFailed(f"spark job failed: {_SPARK_ADVICE.sub('', spark_failure_cause(exc)).strip()}")
    return None


def _unreachable_reason(exc: BaseException) -> str:
    # The messages name the server's address (ours, or gRPC's `ipv4:10.0.0.5:15002`): say what happened only.
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    if "deadline" in text or "timed out" in text or "timeout" in text:
        return "no answer in time"
    return "no connection"
