"""A failed Spark call becomes one line a person can act on, and the right problem: 422 `query-failed` when Spark
refused the query's data or SQL (as the local engine answers), 502 when Spark ran the job and it failed, 503 when
Spark could not be reached, nothing (a 500 stays a 500) when the error is not Spark's. No detail names Spark's
address, shows a JVM stack or advises changing Spark's configuration. A query session refuses SQL on files."""

from __future__ import annotations

import grpc
import pytest
from pyspark.errors.exceptions.connect import (
    AnalysisException,
    ArithmeticException,
    NumberFormatException,
    PythonException,
    SparkConnectGrpcException,
)

from strata_core.errors import Unavailable
from strata_frame.spark import SparkSessionFactory
from strata_frame.spark.errors import (
    SparkJobFailed,
    failure_reason,
    query_error_cause,
    spark_failure_cause,
    spark_problem,
)

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
    problem = spark_problem(exc)
    assert isinstance(problem, SparkJobFailed) and problem.status == 502
    assert problem.detail == "spark job failed: ModuleNotFoundError: No module named 'strata_jobs'"


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
    problem = spark_problem(exc)
    assert isinstance(problem, Unavailable) and problem.status == 503
    assert problem.detail == "the Spark engine is unreachable: no connection"
    refused = spark_problem(ConnectionError("spark:15002: connection refused"))
    assert isinstance(refused, Unavailable)
    assert refused.detail == "the Spark engine is unreachable: connection refused"
    timed_out = spark_problem(SparkConnectGrpcException(message="ipv4:10.0.0.5:15002: deadline exceeded",
                                                        grpc_status_code=grpc.StatusCode.DEADLINE_EXCEEDED))
    assert timed_out.detail == "the Spark engine is unreachable: no answer in time"


def test_errors_that_are_not_sparks_are_left_alone():
    assert spark_problem(KeyError("x")) is None
    assert query_error_cause(KeyError("x")) is None
    assert failure_reason(ValueError("bad spec")) == "ValueError: bad spec"


def test_a_recorded_failure_reason_starts_with_the_cause_and_keeps_the_details():
    reason = failure_reason(PythonException(message=WORKER_TRACEBACK))
    first, rest = reason.split("\n", 1)
    assert first == "spark job failed: ModuleNotFoundError: No module named 'strata_jobs'"
    assert "cloudpickle.loads" in rest
    assert len(failure_reason(PythonException(message=WORKER_TRACEBACK * 200))) == 4000


OVERFLOW = ("[ARITHMETIC_OVERFLOW] long overflow. Use 'try_add' to tolerate overflow and return NULL instead. If "
            'necessary set "spark.sql.ansi.enabled" to "false" to bypass this error. SQLSTATE: 22003\n'
            "\nJVM stacktrace:\norg.apache.spark.SparkArithmeticException\n\tat org.apache.spark.sql.errors.Ex(x:1)")


def test_a_data_error_is_the_querys_and_says_only_what_the_client_can_act_on():
    cause = query_error_cause(ArithmeticException(message=OVERFLOW, errorClass="ARITHMETIC_OVERFLOW",
                                                  sql_state="22003"))
    assert cause == "[ARITHMETIC_OVERFLOW] long overflow. Use 'try_add' to tolerate overflow and return NULL instead."
    cast = NumberFormatException(message="[CAST_INVALID_INPUT] The value 'abc' of the type \"STRING\" cannot be cast "
                                 'to "INT" because it is malformed. SQLSTATE: 22018\n== SQL (line 1, position 8) ==',
                                 errorClass="CAST_INVALID_INPUT", sql_state="22018")
    assert query_error_cause(cast) == ("[CAST_INVALID_INPUT] The value 'abc' of the type \"STRING\" cannot be cast "
                                       'to "INT" because it is malformed.')
    unknown_table = AnalysisException(message="[TABLE_OR_VIEW_NOT_FOUND] The table or view `parquet`.`/tmp/x` cannot "
                                      "be found.", errorClass="TABLE_OR_VIEW_NOT_FOUND", sql_state="42P01")
    assert query_error_cause(unknown_table).startswith("[TABLE_OR_VIEW_NOT_FOUND]")


def test_a_job_failure_is_not_the_querys():
    # A task that died (no SQLSTATE, or one outside classes 22 and 42) is Spark's failure: 502, not 422.
    assert query_error_cause(PythonException(message=WORKER_TRACEBACK)) is None
    lost = SparkConnectGrpcException(message="[TASK_LOST] executor lost", errorClass="TASK_LOST", sql_state="XX000")
    assert query_error_cause(lost) is None
    assert isinstance(spark_problem(lost), SparkJobFailed)


@pytest.mark.spark
def test_a_query_session_refuses_sql_on_files(spark_factory: SparkSessionFactory, tmp_path):
    (tmp_path / "x").mkdir()
    session = spark_factory.query_session()
    session.range(3).write.mode("overwrite").parquet(str(tmp_path / "x"))
    assert session.read.parquet(str(tmp_path / "x")).count() == 3  # DataFrame reads, which jobs use, still work
    with pytest.raises(AnalysisException) as refused:
        session.sql(f"SELECT * FROM parquet.`{tmp_path / 'x'}`").collect()
    assert refused.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    assert session.conf.get("spark.sql.runSQLOnFiles") == "false"
