"""Strata's leased job queue, written once and configured per queue (compaction: merges of splits; indexing: the
artifact build of one file). docs/architecture.md, "Job lifecycle" and "How a job flows", says the same with the
queues' own steps.

How a job moves, who moves it, and where:

1. **Planned** (status `unassigned`). The planner creates compaction jobs, each claiming its input splits
   (`strata_planner.compaction.planning.plan_index` -> `CompactionRepository.create_jobs`); publishing a split
   enqueues its indexing job (`SplitRepository` -> `IndexingRepository.enqueue`), and the indexer's janitor enqueues
   a repair. A new job's lease columns are `metastore.job_columns.new_job_values`.
2. **Queued**: waiting in the queue's declared order (`domain.scheduler_rules.COMPACTION_ASSIGNMENT_ORDER`,
   `INDEXING_ASSIGNMENT_ORDER`, turned into SQL by `metastore.lease_queue.LeaseQueue.waiting`), skipped while its index
   is paused for the queue.
3. **Leased** (`in_progress`). The scheduler, on a worker's poll (`service.poll`, behind the routes of
   `router.job_queue_router`), revokes expired leases, lets the queue do its housekeeping (compaction plans, via
   `domain.scheduler_rules.jobs_to_plan`), and hands out at most the worker's capacity within the caps on jobs in
   progress (`LeaseQueue.lease_within`, `domain.scheduler_rules.choose_within_limits`). `LeaseQueue.lease` gives each
   job a lease deadline and a **fencing token** from one PostgreSQL sequence
   (`metastore.job_columns.fencing_token_seq`), larger than any earlier token of either queue.
4. **Heartbeats**. The worker (`runner.PollingRunner`) runs the job through `executor.JobExecutor`, on Spark or, for
   tiny inputs, in a child process (`local_jobs.LocalJobPool`), and polls at least every half lease, reporting
   each running job; `service.apply_update` -> `LeaseQueue.refresh` extends its lease. A worker that stops gives
   its jobs back (`released`: `LeaseQueue.release`, `unassigned` again without a failure), those not started at
   once, those running once they finish or its shutdown timeout passes (`runner.PollingRunner.shutdown`).
5. **Succeeded** (`success`). The worker reports the result; the scheduler publishes it in one transaction fenced
   by the token (`service.apply_update` -> `QueueSpec.publish`: planner-api's `publish_merge` or
   `strata_indexer.indexing.scheduler`'s build publish), which ends in `LeaseQueue.succeed`. A result that cannot
   be published (`metastore.lease_queue.PublishRefused`) counts as a failed attempt.
6. **Failed**, then **retried** or **excluded**. A reported failure (`LeaseQueue.fail`) or a lease that expired
   (`LeaseQueue.expire_leases`: a worker that died never reports) is one failure (`LeaseQueue.record_failure`): below
   `max_failures` the job is `unassigned` again and its next lease draws a new token; at the threshold it is `excluded`
   (`domain.job_statuses.status_after_failure`). An operator retries an excluded job (`LeaseQueue.retry`, through the
   router's `retry` action) or cancels it; deleting an index cancels its live jobs (`LeaseQueue.cancel_live_of_index`).
7. **Afterwards**: what a merge replaced, and what an attempt wrote but never published, is deleted by planner-api's
   garbage collector (`strata_planner.compaction.gc`); indexer-api's janitor (`strata_indexer.indexing.janitor`)
   reconciles artifact objects with the catalog.

The invariants it keeps (named as docs/architecture.md names them):

- **Every status change goes through `check_transition`** (`domain.job_statuses.ALLOWED_TRANSITIONS`): `success` and
  `cancelled` are final; there is no `failed` status, a failure is an event recorded on the job.
- **Fencing token**: every worker write locks the job and checks `job_id`, `fencing_token` and
  `status = in_progress` (`LeaseQueue.fenced`); anything else raises `StaleToken` and changes nothing, so a stale
  worker can never publish.
- **An expired lease counts as a failure**, so a job that keeps killing its workers ends up excluded.
- A split is claimed by at most one live compaction job, a file built by at most one live indexing job (partial
  unique indexes of the job tables); a publish is all or nothing, so readers see either a merge's inputs or its
  outputs.

Modules, one thing each: `service` the scheduler behind every poll (`QueueSpec` says what differs between queues);
`schemas` and `router` the worker protocol's bodies and every queue's HTTP routes; `runner` the worker loop;
`executor` how it runs one job, on Spark or locally (`JobKind` says what differs between queues); `local_jobs` the
worker's pool of local processes for small jobs. What they stand on lies below this package, so the
metastore never imports it: the pure rules, `domain.job_statuses` and `domain.scheduler_rules` (no SQLAlchemy,
FastAPI or Pydantic, so `strata_jobs` could import them); the SQLAlchemy columns every job table mixes in,
`metastore.job_columns`; the lease and fencing SQL, `metastore.lease_queue.LeaseQueue`. The job tables themselves
(`metastore/compaction_models.py`, `metastore/indexing_models.py`) are the metastore's too: they share its one
`DeclarativeBase` and its one Alembic history. What a job holds and how its success is published are the queue's
own (`metastore/compaction_repository.py`, `metastore/indexing_repository.py`, and each API's `scheduler.py`).
"""
