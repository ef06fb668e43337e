"""The default schemas of OTLP signals, after the OpenTelemetry semantic conventions: one index per signal and
tenant, created on first use.

Every column is one the index model already has (string, i64, f64, bool, timestamp). `timestamp` (microseconds)
places rows in windows and answers time filters; the exact nanoseconds are kept beside it. The common resource
attributes are columns; every other attribute is kept, losslessly, in a JSON column.
"""

from __future__ import annotations

import enum
import hashlib
import re

from strata_core.domain.index_config import ArtifactConfig, BloomColumnConfig, FieldSpec, IndexSettings

# Resource attributes that get a column of their own (when their value is a string): the ones dashboards filter
# and group by. Any other resource attribute stays in `resource_attributes`.
RESOURCE_COLUMNS: dict[str, str] = {
    "service.name": "service_name",
    "service.namespace": "service_namespace",
    "service.version": "service_version",
    "service.instance.id": "service_instance_id",
    "deployment.environment.name": "deployment_environment_name",
    "host.name": "host_name",
    "k8s.namespace.name": "k8s_namespace_name",
    "k8s.pod.name": "k8s_pod_name",
}
_RESOURCE_FIELDS = [(column, "string") for column in RESOURCE_COLUMNS.values()]
_SCOPE_FIELDS = [("resource_attributes", "string"), ("scope_name", "string"), ("scope_version", "string")]


class Signal(enum.StrEnum):
    LOGS = "logs"
    TRACES = "traces"
    METRICS = "metrics"


LOG_FIELDS = [
    ("timestamp", "timestamp"), ("time_unix_nano", "i64"), ("observed_time_unix_nano", "i64"),
    ("severity_number", "i64"), ("severity_text", "string"), ("body", "string"), ("body_type", "string"),
    ("trace_id", "string"), ("span_id", "string"), ("flags", "i64"), ("event_name", "string"),
    *_RESOURCE_FIELDS, *_SCOPE_FIELDS, ("attributes", "string"), ("dropped_attributes_count", "i64"),
]
SPAN_FIELDS = [
    ("timestamp", "timestamp"), ("start_time_unix_nano", "i64"), ("end_time_unix_nano", "i64"),
    ("duration_nanos", "i64"), ("trace_id", "string"), ("span_id", "string"), ("parent_span_id", "string"),
    ("trace_state", "string"), ("flags", "i64"), ("name", "string"), ("kind", "string"),
    ("status_code", "string"), ("status_message", "string"),
    *_RESOURCE_FIELDS, *_SCOPE_FIELDS, ("attributes", "string"), ("events", "string"), ("links", "string"),
    ("dropped_attributes_count", "i64"), ("dropped_events_count", "i64"), ("dropped_links_count", "i64"),
]
METRIC_FIELDS = [
    ("timestamp", "timestamp"), ("time_unix_nano", "i64"), ("start_time_unix_nano", "i64"),
    ("metric_name", "string"), ("metric_description", "string"), ("metric_unit", "string"),
    ("metric_type", "string"), ("temporality", "string"), ("is_monotonic", "bool"),
    ("value", "f64"), ("value_int", "i64"), ("count", "i64"), ("sum", "f64"), ("min", "f64"), ("max", "f64"),
    ("bucket_counts", "string"), ("explicit_bounds", "string"), ("exponential", "string"), ("quantiles", "string"),
    ("exemplars", "string"), ("flags", "i64"),
    *_RESOURCE_FIELDS, *_SCOPE_FIELDS, ("attributes", "string"),
]

FIELDS = {Signal.LOGS: LOG_FIELDS, Signal.TRACES: SPAN_FIELDS, Signal.METRICS: METRIC_FIELDS}
_SORT = {Signal.LOGS: "service_name,timestamp@v1", Signal.TRACES: "service_name,timestamp@v1",
         Signal.METRICS: "metric_name,service_name,timestamp@v1"}
_ARTIFACTS = {
    Signal.LOGS: ArtifactConfig(bloom_columns=[BloomColumnConfig(column="trace_id")],
                                bitmap_columns=["service_name", "severity_text"], full_text_columns=["body"]),
    Signal.TRACES: ArtifactConfig(bloom_columns=[BloomColumnConfig(column="trace_id")],
                                  bitmap_columns=["service_name", "name", "kind", "status_code"]),
    Signal.METRICS: ArtifactConfig(bitmap_columns=["metric_name", "service_name", "metric_type"]),
}


def default_settings(signal: Signal) -> IndexSettings:
    """Logs and spans sort by service then time (a service's rows of a window are one run, what most queries
    read); metric points by metric, then service, then time. Windows of 15 minutes, an hour of late data."""
    return IndexSettings(
        description=f"OpenTelemetry {signal} (OTLP), Strata's default schema",
        fields=[FieldSpec(name=name, type=kind) for name, kind in FIELDS[signal]],
        timestamp_field="timestamp",
        sort_schema=_SORT[signal],
        window_duration_secs=900,
        compaction_start_time=0,
        late_data_acceptance_secs=3600,
        artifacts=_ARTIFACTS[signal],
    )


_NOT_IN_ID = re.compile(r"[^a-z0-9_-]")


def default_index_id(signal: Signal, tenant: str | None) -> str:
    """`otel-logs-<tenant>` (or `otel-logs` for a key without a tenant). A tenant name that is not already a valid
    id piece is normalized and given a short hash, so two tenants never share an index."""
    if tenant is None:
        return f"otel-{signal}"
    piece = _NOT_IN_ID.sub("-", tenant.lower())[:40]
    if piece != tenant:
        piece = f"{piece}-{hashlib.sha256(tenant.encode()).hexdigest()[:8]}"
    return f"otel-{signal}-{piece}"
