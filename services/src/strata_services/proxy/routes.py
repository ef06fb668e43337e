"""Which API serves a /v1 path: the proxy is one entry point (and the console's one origin) for all three.

Decided by the path alone, from the routes each API declares: planner-api owns compaction, the window timeline,
debt, retention, row-level deletes, the background passes (`maintenance`: one table of leases for planner-api's and
indexer-api's replicas, so one API lists them all) and the metastore's verify and rebuild, indexer-api the index
catalog, ingestion (OTLP's /v1/logs, /v1/traces and /v1/metrics too), splits, artifacts and indexing, query-api the
rest (queries, plans, and every path no API knows, so an unknown route still answers query-api's problem+json 404)."""

from __future__ import annotations

PLANNER, INDEXER, QUERY = "planner-api", "indexer-api", "query-api"
APIS = (PLANNER, INDEXER, QUERY)
OTLP_SIGNALS = ("logs", "traces", "metrics")


def api_for_path(path: str) -> str:
    """`path` is what follows `/v1/`."""
    parts = path.strip("/").split("/")
    head = parts[0]
    if head in ("compaction", "maintenance", "metastore"):
        return PLANNER
    # OTLP/HTTP's standard paths, which an exporter given Strata's base URL appends: indexer-api ingests them.
    if head in ("indexing", "splits") or (len(parts) == 1 and head in OTLP_SIGNALS):
        return INDEXER
    if head == "indexes":
        # /v1/indexes/{id}/windows, .../debt, .../compaction/..., .../retention/... and .../deletes... are
        # planner-api's; the catalog, ingest, splits and indexing of an index are indexer-api's.
        if len(parts) >= 3 and parts[2] in ("windows", "debt", "compaction", "retention", "deletes"):
            return PLANNER
        return INDEXER
    return QUERY
