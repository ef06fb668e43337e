"""What query-api keeps between requests: the planning caches, the plan and result cache and the RAM tier, the
engines, admission, and the query metrics."""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from strata_core.config import QuerySettings
from strata_core.object_store_metrics import ObjectStoreMetrics
from strata_core.storage import ObjectStore
from strata_frame.spark.session import SparkSessionFactory
from strata_metastore.single_reads import SingleReads
from strata_query.execution.admission import FairAdmission
from strata_query.execution.engine_choice import Engines, LocalLimits
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.local_query import LocalEngine
from strata_query.execution.spark_query import SparkEngine
from strata_query.planning.caches import ArtifactCache, ByteLru, FooterCache
from strata_query.planning.plan import QueryPlan
from strata_query.query_cache import PlanCache

log = logging.getLogger("strata.query")


class QueryMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.latency = Histogram("strata_query_phase_seconds", "Query latency by phase", ["phase"],
                                 registry=registry, buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                                             10, 30, 60, 300))
        self.pruned = Counter("strata_query_pruned_total", "Files and row groups removed, by pruning stage",
                              ["stage", "unit"], registry=registry)
        self.bytes_scanned = Counter("strata_query_bytes_scanned_total", "Bytes of column chunks read by queries",
                                     registry=registry)
        self.rows_scanned = Counter("strata_query_rows_scanned_total", "Rows in the row groups queries read",
                                    registry=registry)
        self.outcomes = Counter("strata_query_total", "Queries by outcome", ["outcome"], registry=registry)
        self.engines = Counter("strata_query_engine_total", "Queries executed, by engine", ["engine"],
                               registry=registry)
        self.plan_cache = Counter("strata_query_plan_cache_total", "Plan lookups in the plan cache: hit, miss "
                                  "(never planned here), stale (planned, but its index changed since)",
                                  ["outcome"], registry=registry)
        self.run_ahead = Counter("strata_query_run_ahead_total", "Runs started on a kept plan before its check: used "
                                 "(the plan held) or abandoned (it had changed, or the result cache answered)",
                                 ["outcome"], registry=registry)
        self.truncated = Counter("strata_query_truncated_total", "Results cut at the result-row cap",
                                 registry=registry)
        self.result_cache = Counter("strata_query_result_cache_total", "Executions by where the result came from: "
                                    "hit (a cached result), miss (run now), bypass (run now: Cache-Control)",
                                    ["outcome"], registry=registry)

    def observe_plan(self, plan: QueryPlan) -> None:
        """Counts what each stage pruned. Metrics never fail a query: a stage reporting more after it than before
        it would be a planner defect, logged and counted as zero rather than raised to the caller."""
        for stage in plan.stages:
            for unit, before, after in (("files", stage.files_before, stage.files_after),
                                        ("row_groups", stage.row_groups_before, stage.row_groups_after)):
                if after > before:
                    log.error("plan of %s: stage %s reports %d %s after it but %d before", plan.index_id,
                              stage.stage, after, unit, before)
                    continue
                self.pruned.labels(stage.stage, unit).inc(before - after)


class CacheCollector:
    """Hits, misses and size of query-api's caches in /metrics: the RAM tier, footers, artifacts."""

    def __init__(self, caches: dict[str, ByteLru]) -> None:
        self.caches = caches

    def collect(self):
        hits = CounterMetricFamily("strata_query_cache_hits", "Cache lookups that found their entry", labels=["cache"])
        misses = CounterMetricFamily("strata_query_cache_misses", "Cache lookups that missed", labels=["cache"])
        ratio = GaugeMetricFamily("strata_query_cache_hit_ratio", "Hits over lookups since start", labels=["cache"])
        size = GaugeMetricFamily("strata_query_cache_bytes", "Bytes held", labels=["cache"])
        for name, lru in self.caches.items():
            hits.add_metric([name], lru.hits)
            misses.add_metric([name], lru.misses)
            lookups = lru.hits + lru.misses
            ratio.add_metric([name], lru.hits / lookups if lookups else 0.0)
            size.add_metric([name], lru.size_bytes)
        return [hits, misses, ratio, size]


class QueryRuntime:
    def __init__(self, storage: ObjectStore, registry: CollectorRegistry, query: QuerySettings, database_url: str,
                 spark: SparkSessionFactory | None, object_store: ObjectStoreMetrics) -> None:
        self.artifacts = ArtifactCache(storage, query.artifact_cache_bytes)
        self.footers = FooterCache(storage, query.footer_cache_bytes)
        self.hot = HotTier(storage, self.footers, query.hot_cache_bytes)
        self.local = LocalEngine(self.hot, query.local_threads, memory_limit_bytes=query.local_memory_limit_bytes)
        self.engines = Engines(self.local, None if spark is None else SparkEngine(spark))
        self.local_limits = LocalLimits(query.local_max_bytes, query.local_max_rows, query.local_max_files)
        self.plan_cache = PlanCache(query.plan_cache_plans, query.plan_cache_files, query.result_cache_bytes,
                                    query.result_cache_max_result_bytes)
        # Checking a cached plan is one statement on every repeated query: one round trip on a kept connection.
        self.plan_checks = SingleReads(database_url, "strata-query-plan-check")
        self.admission = FairAdmission(query.max_concurrent, query.max_concurrent_per_tenant,
                                       query.max_waiting_per_tenant)
        self.metrics = QueryMetrics(registry)
        self.object_store = object_store
        Gauge("strata_query_result_cache_bytes", "Bytes of the results in the result cache",
              registry=registry).set_function(lambda: self.plan_cache.result_bytes)
        registry.register(CacheCollector({"hot": self.hot.lru, "footers": self.footers.lru,
                                          "artifacts": self.artifacts.lru}))

    def close(self) -> None:
        self.local.close()
        self.plan_checks.close()
