"""Contains all the data models used in inputs/outputs"""

from .cancel_sql_query_response_cancel_sql_query import (
    CancelSqlQueryResponseCancelSqlQuery,
)
from .engine_out import EngineOut
from .engine_out_engine_type_0 import EngineOutEngineType0
from .field_problem import FieldProblem
from .file_part_out import FilePartOut
from .file_part_out_pruned_with import FilePartOutPrunedWith
from .health import Health
from .plan_out import PlanOut
from .plan_status import PlanStatus
from .plan_status_status import PlanStatusStatus
from .problem import Problem
from .query_request import QueryRequest
from .query_request_engine_type_0 import QueryRequestEngineType0
from .query_result import QueryResult
from .query_result_rows_item import QueryResultRowsItem
from .readiness import Readiness
from .readiness_checks import ReadinessChecks
from .result_column import ResultColumn
from .result_summary import ResultSummary
from .result_summary_engine import ResultSummaryEngine
from .result_summary_result_cache import ResultSummaryResultCache
from .stage_out import StageOut
from .time_range_out import TimeRangeOut
from .time_range_out_source import TimeRangeOutSource
from .time_range_out_unit import TimeRangeOutUnit

__all__ = (
    "CancelSqlQueryResponseCancelSqlQuery",
    "EngineOut",
    "EngineOutEngineType0",
    "FieldProblem",
    "FilePartOut",
    "FilePartOutPrunedWith",
    "Health",
    "PlanOut",
    "PlanStatus",
    "PlanStatusStatus",
    "Problem",
    "QueryRequest",
    "QueryRequestEngineType0",
    "QueryResult",
    "QueryResultRowsItem",
    "Readiness",
    "ReadinessChecks",
    "ResultColumn",
    "ResultSummary",
    "ResultSummaryEngine",
    "ResultSummaryResultCache",
    "StageOut",
    "TimeRangeOut",
    "TimeRangeOutSource",
    "TimeRangeOutUnit",
)
