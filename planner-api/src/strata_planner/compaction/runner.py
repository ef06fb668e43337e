"""The compaction runner: the shared polling worker loop speaking `/v1/compaction/poll`. It runs inside
planner-api by default (slots configurable, 0 = off) and standalone as `strata worker`."""

from __future__ import annotations

import httpx

from strata_frame.jobqueue.runner import Executor, PollingRunner, PollProtocol
from strata_jobs.merge import MergeResult
from strata_planner.compaction.schemas import OutputSplit, PollResponse


def output_splits(result: MergeResult) -> list[OutputSplit]:
    return [
        OutputSplit(split_id=s.split_id, uri=s.uri, num_rows=s.num_rows, size_bytes=s.size_bytes,
                    window_start=s.window_start, time_range_start=s.time_range_start,
                    time_range_end=s.time_range_end, row_groups=[rg.to_json() for rg in s.row_groups],
                    column_stats={name: st.to_json() for name, st in s.column_stats.items()})
        for s in result.outputs
    ]


COMPACTION_PROTOCOL = PollProtocol(
    poll_path="/v1/compaction/poll",
    parse_response=PollResponse.model_validate,
    success_fields=lambda result: {"outputs": [o.model_dump(mode="json") for o in output_splits(result)],
                                   "unchanged": result.unchanged},
    running_stage="merging",
    stage_progress={"merging": 0.1, "publishing": 0.9},
)


class CompactionRunner(PollingRunner):
    def __init__(self, client: httpx.AsyncClient, *, worker_id: str, slots: int, executor: Executor,
                 api_key: str, poll_interval_secs: float = 2.0, merge_delay_secs: float = 0.0,
                 report_delay_secs: float = 0.0, shutdown_timeout_secs: float = 10.0, local_slots: int = 0,
                 local_batch: int = 1) -> None:
        super().__init__(client, COMPACTION_PROTOCOL, worker_id=worker_id, slots=slots, executor=executor,
                         api_key=api_key, poll_interval_secs=poll_interval_secs, start_delay_secs=merge_delay_secs,
                         report_delay_secs=report_delay_secs,
                         shutdown_timeout_secs=shutdown_timeout_secs, local_slots=local_slots,
                         local_batch=local_batch)
