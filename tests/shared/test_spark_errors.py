"""A failed Spark call becomes one line a person can act on, and the right problem: 502 when Spark ran the job and
it failed, 503 when Spark could not be reached, nothing (a 500 stays a 500) when the error is not Spark's."""

from __future__ import annotations

import grpc
from pyspark.errors.exceptions.connect import AnalysisException, PythonException, SparkConnectGrpcException

from strata_shared.errors import Unavailable
from strata_shared.spark.errors import SparkJobFailed, failure_reason, spark_failure_cause, spark_problem

WORKER_TRACEBACK = """
  An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/spark/python/lib/pyspark.zip/pyspark/worker.py", line 3369, in main
    func, profiler, deserializer, serializer = read_udfs(pickleSer, infile, eval_type)
  File "/spark/python/lib/pyspark.zip/pyspark/serializers.py", line 473, in loads
    return cloudpickle.loads(obj, encoding=encoding)
ModuleNotFoundError: No module named 'strata_jobs'
"""


def test_a_python_worker_failure_is_named_by_the_exception_that_ended_it():
    exc = PythonException(message=WORKER_TRACEBACK)
    assert spark_failure_cause(exc) == "ModuleNotFoundError: No module named 'strata_jobs'"
    problem = spark_problem(exc, "sc://spark:15002")
    assert isinstance(problem, SparkJobFailed) and problem.status == 502
    assert problem.detail == "spark job failed on sc://spark:15002: ModuleNotFoundError: No module named 'strata_jobs'"


def test_a_chained_python_cause_keeps_only_the_last_exception_and_its_short_name():
    text = "Traceback ...\nValueError: first\n\nDuring handling...\npyarrow.lib.ArrowInvalid: bad file\n"
    assert spark_failure_cause(PythonException(message=text)) == "ArrowInvalid: bad file"


def test_a_jvm_failure_is_named_by_its_first_line_and_error_class():
    exc = AnalysisException(message="Table or view not found: t\nmore lines", errorClass="TABLE_OR_VIEW_NOT_FOUND",
                            messageParameters={"relationName": "t"})
    cause = spark_failure_cause(exc)
    assert cause.splitlines() == [cause]
    assert "TABLE_OR_VIEW_NOT_FOUND" in cause


def test_an_unreachable_server_is_a_503():
    exc = SparkConnectGrpcException(message="failed to connect to all addresses",
                                    grpc_status_code=grpc.StatusCode.UNAVAILABLE)
    problem = spark_problem(exc, "sc://spark:15002")
    assert isinstance(problem, Unavailable) and problem.status == 503
    assert problem.detail.startswith("spark connect sc://spark:15002 unreachable: ")
    refused = spark_problem(ConnectionError("spark:15002: connection refused"), "sc://spark:15002")
    assert isinstance(refused, Unavailable)
    assert refused.detail == "spark connect sc://spark:15002 unreachable: spark:15002: connection refused"


def test_errors_that_are_not_sparks_are_left_alone():
    assert spark_problem(KeyError("x"), "sc://spark:15002") is None
    assert failure_reason(ValueError("bad spec")) == "ValueError: bad spec"


def test_a_recorded_failure_reason_starts_with_the_cause_and_keeps_the_details():
    reason = failure_reason(PythonException(message=WORKER_TRACEBACK))
    first, rest = reason.split("\n", 1)
    assert first == "spark job failed: ModuleNotFoundError: No module named 'strata_jobs'"
    assert "cloudpickle.loads" in rest
    assert len(failure_reason(PythonException(message=WORKER_TRACEBACK * 200))) == 4000
