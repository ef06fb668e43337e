"""Contains all the data models used in inputs/outputs"""

from .assigned_input import AssignedInput
from .assignment import Assignment
from .background_pass_list import BackgroundPassList
from .background_pass_out import BackgroundPassOut
from .bulk_retry_result import BulkRetryResult
from .compaction_debt_out import CompactionDebtOut
from .compaction_debt_out_levels import CompactionDebtOutLevels
from .debt_history import DebtHistory
from .debt_out import DebtOut
from .debt_sample_out import DebtSampleOut
from .dropped_window_out import DroppedWindowOut
from .field_problem import FieldProblem
from .first_merge_delay_out import FirstMergeDelayOut
from .health import Health
from .indexing_debt_out import IndexingDebtOut
from .job_out import JobOut
from .job_out_failure_log_item import JobOutFailureLogItem
from .job_page import JobPage
from .job_status import JobStatus
from .level_debt_out import LevelDebtOut
from .output_column_stats import OutputColumnStats
from .output_column_stats_type import OutputColumnStatsType
from .output_row_group import OutputRowGroup
from .output_split import OutputSplit
from .output_split_column_stats import OutputSplitColumnStats
from .parquet_config import ParquetConfig
from .pause_state import PauseState
from .plan_request import PlanRequest
from .plan_response import PlanResponse
from .plan_response_skipped import PlanResponseSkipped
from .plan_response_skipped_counts import PlanResponseSkippedCounts
from .planned_operation import PlannedOperation
from .poll_request import PollRequest
from .poll_response import PollResponse
from .problem import Problem
from .queue_summary import QueueSummary
from .queue_summary_counts import QueueSummaryCounts
from .readiness import Readiness
from .readiness_checks import ReadinessChecks
from .retention_apply_request import RetentionApplyRequest
from .retention_report import RetentionReport
from .status_update import StatusUpdate
from .status_update_status import StatusUpdateStatus
from .update_result import UpdateResult
from .window_out import WindowOut
from .window_out_levels import WindowOutLevels
from .window_page import WindowPage

__all__ = (
    "AssignedInput",
    "Assignment",
    "BackgroundPassList",
    "BackgroundPassOut",
    "BulkRetryResult",
    "CompactionDebtOut",
    "CompactionDebtOutLevels",
    "DebtHistory",
    "DebtOut",
    "DebtSampleOut",
    "DroppedWindowOut",
    "FieldProblem",
    "FirstMergeDelayOut",
    "Health",
    "IndexingDebtOut",
    "JobOut",
    "JobOutFailureLogItem",
    "JobPage",
    "JobStatus",
    "LevelDebtOut",
    "OutputColumnStats",
    "OutputColumnStatsType",
    "OutputRowGroup",
    "OutputSplit",
    "OutputSplitColumnStats",
    "ParquetConfig",
    "PauseState",
    "PlanRequest",
    "PlanResponse",
    "PlanResponseSkipped",
    "PlanResponseSkippedCounts",
    "PlannedOperation",
    "PollRequest",
    "PollResponse",
    "Problem",
    "QueueSummary",
    "QueueSummaryCounts",
    "Readiness",
    "ReadinessChecks",
    "RetentionApplyRequest",
    "RetentionReport",
    "StatusUpdate",
    "StatusUpdateStatus",
    "UpdateResult",
    "WindowOut",
    "WindowOutLevels",
    "WindowPage",
)
