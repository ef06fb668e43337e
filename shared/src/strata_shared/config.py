"""Configuration for every Strata process, read from `STRATA_`-prefixed environment variables.

Settings are built once at the process edge (CLI, supervisor, test fixture) and passed down into
`create_app(settings)`: nothing below reads the environment itself, so tests can run several apps with
different settings in one process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> Path:
    """Where the local stack keeps its state: `.strata/` in the working directory."""
    return Path.cwd() / ".strata"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRATA_", extra="ignore")

    # When unset, the local stack starts an embedded PostgreSQL (pgserver) and fills this in.
    database_url: str | None = None
    # When unset, the local stack starts a Spark Connect server from the pyspark package and fills this in.
    spark_remote: str | None = None
    # Root of object storage: a local directory (file://) or s3://bucket/prefix.
    storage_uri: str | None = None
    home: Path = Field(default_factory=default_home)

    # JSON object: key -> {"scopes": [...], "tenant": "..."}; `strata up` generates one when unset.
    api_keys: str | None = None

    host: str = "127.0.0.1"
    proxy_port: int = 8000
    planner_port: int = 8001
    indexer_port: int = 8002
    query_port: int = 8003
    # query-api's Arrow Flight SQL server (ADBC/JDBC drivers, notebooks, Grafana), in query-api's process beside its
    # HTTP port; replica i listens on this + 10 * i, as the HTTP ports do. 0 picks a free port (tests).
    flight_port: int = 8004
    # indexer-api's OTLP/gRPC receiver (the Collector's `otlp` exporter, the SDKs' gRPC exporters; OTLP/HTTP goes
    # through the proxy instead), off unless set: 4317 is OTLP's usual port, 0 picks a free one (tests).
    otlp_grpc_port: int | None = None
    spark_port: int = 15002
    # The replicas of each API behind the proxy, as comma-separated base URLs (`upstream_urls`). planner-api's and
    # indexer-api's also take a single URL (`*_URL`, one replica); unset, each API's host and port.
    query_upstreams: str | None = None
    planner_upstreams: str | None = None
    indexer_upstreams: str | None = None
    planner_url: str | None = None
    indexer_url: str | None = None
    # How often the proxy asks each replica's /readyz; a replica that does not answer or says it is draining leaves
    # the rotation at the next answer.
    proxy_health_interval_secs: float = Field(2.0, gt=0)
    # Rolling restarts (`strata serve`, README "Replicas and rolling restarts"): on SIGTERM a process answers
    # /readyz 503 `draining` and keeps serving this long, a bit over the proxy's health-check interval, so the proxy
    # has taken it out of rotation before its listener closes; then requests in flight get this long to finish
    # before they are cancelled and the lifespan shutdown stops background work.
    drain_grace_secs: float = Field(3.0, ge=0)
    shutdown_timeout_secs: float = Field(10.0, ge=0)

    # Ingestion reads the body as a stream and answers 413 past this many bytes.
    max_ingest_bytes: int = 256 * 1024 * 1024
    # Group commit: ingest requests of one scope (index, partition, source) that arrive while a commit of that scope
    # is in flight are written together, as one split per window, at the next commit (docs/architecture.md, "Write
    # path"). A group stops growing at these many decoded rows or Arrow bytes; a request larger alone is its own
    # group. Off, every request is committed alone, as its own split per window.
    ingest_group_commit: bool = True
    ingest_group_max_rows: int = Field(1_000_000, ge=1)
    ingest_group_max_bytes: int = Field(256 * 1024 * 1024, ge=1)
    # Registration batches larger than this are refused whole (422) rather than half-processed.
    max_register_batch: int = 5_000
    readiness_timeout_secs: float = 3.0
    # How `strata serve` (and so every process of `strata up`) writes its log lines: "json" or "text".
    log_format: Literal["json", "text"] = "json"

    # Compaction scheduling (after Pyroscope's compaction service).
    compaction_lease_secs: float = 15.0
    compaction_max_failures: int = 3
    compaction_queue_bound: int = 10_000
    # A planner pass creates up to this many jobs per free slot a worker reports (within the bound): a pass reads
    # every waiting split of the windows it plans, so planning one job per poll made draining a backlog of small
    # splits cost one window read per merge (docs/benchmarks.md, "Keeping up").
    compaction_plan_ahead: int = Field(8, ge=1)
    # Merge slots of the runner inside planner-api; 0 turns it off (run `strata worker` elsewhere).
    compaction_worker_slots: int = 1
    compaction_poll_interval_secs: float = 2.0
    # At most this many compaction jobs in progress at once per tenant (partition_id) and per index, so a backlog
    # in one of them cannot hold every worker while the others wait (indexing has the same caps below).
    compaction_max_in_progress_per_tenant: int = Field(4, ge=1)
    compaction_max_in_progress_per_index: int = Field(4, ge=1)
    # How often planner-api looks for indexes whose retention pass is due (each index's own interval decides).
    retention_tick_secs: float = 30.0
    # Inputs of a merge stay readable this long after it publishes, so queries planned before it finish.
    gc_grace_secs: int = 600
    gc_interval_secs: float = 30.0
    # The commit log (docs/architecture.md, "The commit log"): how often planner-api writes to the bucket the
    # entries whose writers died before writing them, and how often it folds the log into a checkpoint once at
    # least `commit_log_checkpoint_entries` entries were committed since the last one (a rebuild then reads the
    # checkpoint and at most about that many entries).
    commit_log_ship_interval_secs: float = Field(15.0, gt=0)
    commit_log_checkpoint_interval_secs: float = Field(60.0, gt=0)
    commit_log_checkpoint_entries: int = Field(10_000, ge=1)
    # The collector keeps a replaced split's file while a query that started before it was replaced still runs (on
    # any live query-api replica), past the grace, but never longer than this after it was replaced.
    gc_max_query_hold_secs: float = 3600.0
    # A merge whose inputs add up to at most this many bytes runs in a local process of its worker instead of as a
    # Spark job: same kernel and checks, without a Spark job's fixed ~0.5-0.8 s (docs/benchmarks.md, "Keeping
    # up"). 0 sends every merge to Spark.
    compaction_local_max_bytes: int = Field(32 * 1024 * 1024, ge=0)
    # At shutdown a job runner (embedded or `strata worker`) gives its jobs back: those not started at once, those
    # running once they finish or after this long (then interrupted), so no job waits out a lease or counts a
    # failure because its worker was restarted.
    worker_shutdown_timeout_secs: float = Field(10.0, ge=0)
    # Fault injection for tests: runners hold each job this long in the "merging" stage before submitting it.
    fault_merge_delay_secs: float = 0.0
    # Fault injection for tests: runners hold each finished job's result this long before reporting it, so a kill
    # in between leaves its outputs written and never published (a power loss after the work, before the report).
    fault_report_delay_secs: float = 0.0

    # Indexing jobs (same scheduler rules as compaction: leases, fencing tokens, failures).
    # Build slots of the runner inside indexer-api; 0 turns it off.
    indexing_worker_slots: int = 1
    # A file of at most this many bytes gets its artifacts built in a local process of the worker instead of a
    # Spark job (as for merges above). 0 sends every build to Spark.
    indexing_local_max_bytes: int = Field(32 * 1024 * 1024, ge=0)
    # At most this many indexing jobs in progress at once, in total and per tenant (partition_id).
    indexing_max_in_progress: int = 8
    indexing_max_in_progress_per_tenant: int = 2
    indexing_poll_interval_secs: float = 1.0
    indexing_lease_secs: float = 15.0
    indexing_max_failures: int = 3
    # Artifact uploads: attempts and first backoff (doubled each retry, with jitter).
    artifact_upload_attempts: int = 5
    artifact_upload_backoff_secs: float = 0.2
    # The janitor deletes unregistered or invalid artifact objects older than this.
    janitor_grace_secs: int = 600
    janitor_interval_secs: float = 60.0
    # Fault injection for tests: the first N artifact uploads of each build fail.
    fault_artifact_upload_failures: int = 0

    # Query planning and execution.
    query_max_files: int = 10_000
    query_timeout_secs: float = 300.0
    # Plans at or under all three limits run on query-api's in-process engine (DuckDB), larger ones on Spark.
    # Bytes are the column chunks the plan reads (compressed); defaults measured on a 2-core machine
    # (docs/benchmarks.md, "Query engines").
    query_local_max_bytes: int = 256 * 1024 * 1024
    query_local_max_rows: int = 20_000_000
    query_local_max_files: int = 512
    # Threads of the in-process engine, shared by every local query (admission bounds how many run at once).
    query_local_threads: int = 2
    # Decoded row groups of hot files kept in memory as Arrow (the RAM tier); 0 turns it off.
    query_hot_cache_bytes: int = 512 * 1024 * 1024
    # Parquet footers and decoded artifacts planning reads, kept across queries so a repeated query fetches
    # neither again (bytes: serialized footers; artifacts at four times their stored size).
    query_footer_cache_bytes: int = 64 * 1024 * 1024
    query_artifact_cache_bytes: int = 256 * 1024 * 1024
    # A result stops after this many rows; a cut is reported (header and end-of-stream flag), never silent.
    query_max_result_rows: int = 1_000_000
    # Finished results of repeated queries kept with their kept plan, valid exactly as long as it is (the same
    # published files); bytes of Arrow data in all. 0 turns it off.
    query_result_cache_bytes: int = 64 * 1024 * 1024
    # query-api's own admission: queries (plans and executions) in flight at once, per tenant and in total;
    # waiting requests are admitted round-robin across tenants, and a tenant with this many waiting gets 429.
    query_max_concurrent: int = 8
    query_max_concurrent_per_tenant: int = 2
    query_max_waiting_per_tenant: int = 64
    # Fault injection for tests: the scan tasks of every query wait this long before reading.
    fault_query_scan_delay_secs: float = 0.0
    # Fault injection for tests: every asynchronous plan waits this long before planning (within its timeout).
    fault_query_plan_delay_secs: float = 0.0
    # The proxy's per-tenant limits: token bucket (rate per second, burst) and concurrent requests. query-api's
    # Flight SQL door applies them too, per replica (`strata_shared.web.tenant_limits`).
    proxy_rate_per_sec: float = 50.0
    proxy_burst: int = 100
    proxy_max_concurrent_per_tenant: int = 8
    # A refused request is answered with its 429 only after this delay (HAProxy's "tarpit"), at most this many held
    # at once (beyond them, at once): a client looping on 429s then costs the proxy one answer per delay instead of
    # all the CPU it can take, which other tenants' requests share. 0 answers at once.
    proxy_reject_delay_secs: float = 1.0
    proxy_max_held_rejections: int = 4096

    # Child processes per worker (in each API that embeds one, and in `strata worker`) running the small jobs above,
    # at this CPU niceness below the API's own, so its requests (ingestion above all) come first.
    local_job_processes: int = Field(1, ge=1)
    local_job_niceness: int = Field(10, ge=0, le=19)

    spark_master: str = "local[2]"
    # Where the job bundle shipped to Spark sessions is built and kept (one per code version); home/job-bundles
    # when unset.
    job_bundle_dir: Path | None = None
    spark_driver_memory: str = "2g"

    @field_validator("database_url")
    @classmethod
    def _use_asyncpg(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for plain in ("postgresql://", "postgres://"):
            if value.startswith(plain):
                return "postgresql+asyncpg://" + value[len(plain) :]
        return value

    def api_base_url(self, name: str) -> str:
        """Where a Strata process (`planner-api`, `indexer-api`, `query-api`, `proxy`) is reached, by default."""
        explicit = {"planner-api": self.planner_url, "indexer-api": self.indexer_url}.get(name)
        port = {"planner-api": self.planner_port, "indexer-api": self.indexer_port, "query-api": self.query_port,
                "proxy": self.proxy_port}[name]
        return (explicit or f"http://{self.host}:{port}").rstrip("/")

    def upstream_urls(self, name: str) -> list[str]:
        """The replicas of one API (`planner-api`, `indexer-api`, `query-api`) the proxy spreads its requests
        over."""
        listed = {"planner-api": self.planner_upstreams, "indexer-api": self.indexer_upstreams,
                  "query-api": self.query_upstreams}[name]
        if not listed:
            return [self.api_base_url(name)]
        return [url.strip().rstrip("/") for url in listed.split(",") if url.strip()]

    @property
    def resolved_job_bundle_dir(self) -> Path:
        return (self.job_bundle_dir or self.home / "job-bundles").resolve()

    @property
    def resolved_storage_uri(self) -> str:
        if self.storage_uri:
            return self.storage_uri.rstrip("/")
        return (self.home / "data").resolve().as_uri()
