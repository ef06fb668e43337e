"""Contains all the data models used in inputs/outputs"""

from .artifact_config import ArtifactConfig
from .artifact_in import ArtifactIn
from .artifact_out import ArtifactOut
from .bloom_column_config import BloomColumnConfig
from .bulk_retry_result import BulkRetryResult
from .column_stats_out import ColumnStatsOut
from .field_problem import FieldProblem
from .field_spec import FieldSpec
from .field_type import FieldType
from .health import Health
from .index_config import IndexConfig
from .index_lag import IndexLag
from .index_out import IndexOut
from .index_page import IndexPage
from .index_settings import IndexSettings
from .indexing_assignment import IndexingAssignment
from .indexing_assignment_field_types import IndexingAssignmentFieldTypes
from .indexing_job_out import IndexingJobOut
from .indexing_job_out_failure_log_item import IndexingJobOutFailureLogItem
from .indexing_job_out_skipped_item import IndexingJobOutSkippedItem
from .indexing_job_page import IndexingJobPage
from .indexing_lag_response import IndexingLagResponse
from .indexing_poll_request import IndexingPollRequest
from .indexing_poll_response import IndexingPollResponse
from .indexing_update import IndexingUpdate
from .indexing_update_skipped_item import IndexingUpdateSkippedItem
from .indexing_update_status import IndexingUpdateStatus
from .ingest_response import IngestResponse
from .ingested_split import IngestedSplit
from .janitor_report_out import JanitorReportOut
from .job_status import JobStatus
from .maintenance_pass import MaintenancePass
from .merge_policy_config import MergePolicyConfig
from .parquet_config import ParquetConfig
from .pause_state import PauseState
from .problem import Problem
from .query_config import QueryConfig
from .queue_summary import QueueSummary
from .queue_summary_counts import QueueSummaryCounts
from .readiness import Readiness
from .readiness_checks import ReadinessChecks
from .register_artifacts_request import RegisterArtifactsRequest
from .register_artifacts_response import RegisterArtifactsResponse
from .register_splits_request import RegisterSplitsRequest
from .register_splits_response import RegisterSplitsResponse
from .retention_config import RetentionConfig
from .row_group_out import RowGroupOut
from .skip_out import SkipOut
from .skip_page import SkipPage
from .snapshot_out import SnapshotOut
from .split_artifacts import SplitArtifacts
from .split_out import SplitOut
from .split_out_column_stats import SplitOutColumnStats
from .split_page import SplitPage
from .split_state import SplitState
from .split_to_register import SplitToRegister
from .update_result import UpdateResult

__all__ = (
    "ArtifactConfig",
    "ArtifactIn",
    "ArtifactOut",
    "BloomColumnConfig",
    "BulkRetryResult",
    "ColumnStatsOut",
    "FieldProblem",
    "FieldSpec",
    "FieldType",
    "Health",
    "IndexConfig",
    "IndexLag",
    "IndexOut",
    "IndexPage",
    "IndexSettings",
    "IndexingAssignment",
    "IndexingAssignmentFieldTypes",
    "IndexingJobOut",
    "IndexingJobOutFailureLogItem",
    "IndexingJobOutSkippedItem",
    "IndexingJobPage",
    "IndexingLagResponse",
    "IndexingPollRequest",
    "IndexingPollResponse",
    "IndexingUpdate",
    "IndexingUpdateSkippedItem",
    "IndexingUpdateStatus",
    "IngestResponse",
    "IngestedSplit",
    "JanitorReportOut",
    "JobStatus",
    "MaintenancePass",
    "MergePolicyConfig",
    "ParquetConfig",
    "PauseState",
    "Problem",
    "QueryConfig",
    "QueueSummary",
    "QueueSummaryCounts",
    "Readiness",
    "ReadinessChecks",
    "RegisterArtifactsRequest",
    "RegisterArtifactsResponse",
    "RegisterSplitsRequest",
    "RegisterSplitsResponse",
    "RetentionConfig",
    "RowGroupOut",
    "SkipOut",
    "SkipPage",
    "SnapshotOut",
    "SplitArtifacts",
    "SplitOut",
    "SplitOutColumnStats",
    "SplitPage",
    "SplitState",
    "SplitToRegister",
    "UpdateResult",
)
