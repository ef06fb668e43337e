"""An ExportMetricsServiceRequest as rows of the metric points schema (schemas.METRIC_FIELDS), one row per data
point: gauges and sums in `value` (and `value_int` when the point is an integer), histograms with their count,
sum, min, max, bounds and bucket counts, exponential histograms and summaries with their buckets and quantiles
as JSON."""

from __future__ import annotations

import pyarrow as pa
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, Metric

from strata_core.domain.fields import FieldType
from strata_indexer.otlp.promoted import PromotedAttributes
from strata_indexer.otlp.schemas import METRIC_FIELDS, RESOURCE_COLUMNS
from strata_indexer.otlp.table import Columns
from strata_indexer.otlp.values import Resource, attributes_json, attributes_plain, to_json

_TEMPORALITY = {number: name.removeprefix("AGGREGATION_TEMPORALITY_").lower()
                for name, number in AggregationTemporality.items()}
# The columns only some metric types fill; every row gets a value (or null) in each.
_POINT_COLUMNS = ("value", "value_int", "count", "sum", "min", "max", "bucket_counts", "explicit_bounds",
                  "exponential", "quantiles", "exemplars")


def metrics_table(request: ExportMetricsServiceRequest, fields: dict[str, FieldType]) -> pa.Table:
    columns = Columns([name for name, _ in METRIC_FIELDS], fields)
    for resource_metrics in request.resource_metrics:
        resource = Resource(resource_metrics.resource.attributes, RESOURCE_COLUMNS)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is None:
                    continue
                data = getattr(metric, kind)
                points = data.data_points
                if not points:
                    continue
                columns.repeat(resource, scope_metrics.scope.name, scope_metrics.scope.version, len(points))
                _add_points(columns.lists, columns.promoted, metric, kind, data, points)
    return columns.table(fields, "time_unix_nano")


def _add_points(lists: dict[str, list[object]], promoted: PromotedAttributes, metric: Metric, kind: str, data,
                points) -> None:
    count = len(points)
    lists["metric_name"].extend([metric.name] * count)
    lists["metric_description"].extend([metric.description or None] * count)
    lists["metric_unit"].extend([metric.unit or None] * count)
    lists["metric_type"].extend([kind] * count)
    temporality = _TEMPORALITY.get(data.aggregation_temporality) if kind != "gauge" and kind != "summary" else None
    lists["temporality"].extend([temporality] * count)
    lists["is_monotonic"].extend([data.is_monotonic if kind == "sum" else None] * count)
    row: dict[str, object] = {}
    for point in points:
        lists["time_unix_nano"].append(point.time_unix_nano)
        lists["start_time_unix_nano"].append(point.start_time_unix_nano or None)
        lists["flags"].append(point.flags)
        lists["attributes"].append(attributes_json(point.attributes))
        if promoted:
            promoted.add(point.attributes)
        row.clear()
        if kind in ("gauge", "sum"):
            if point.WhichOneof("value") == "as_int":
                row["value"], row["value_int"] = float(point.as_int), point.as_int
            else:
                row["value"] = point.as_double
        else:
            row["count"] = point.count
            if kind == "summary":
                row["sum"] = point.sum
                row["quantiles"] = to_json([[q.quantile, q.value] for q in point.quantile_values])
            else:
                _histogram(row, kind, point)
        if kind != "summary" and point.exemplars:
            row["exemplars"] = _exemplars(point)
        for column in _POINT_COLUMNS:
            lists[column].append(row.get(column))


def _histogram(row: dict[str, object], kind: str, point) -> None:
    for optional in ("sum", "min", "max"):
        if point.HasField(optional):
            row[optional] = getattr(point, optional)
    if kind == "histogram":
        row["bucket_counts"] = to_json(list(point.bucket_counts))
        row["explicit_bounds"] = to_json(list(point.explicit_bounds))
        return
    row["exponential"] = to_json({
        "scale": point.scale, "zero_count": point.zero_count, "zero_threshold": point.zero_threshold,
        "positive": {"offset": point.positive.offset, "bucket_counts": list(point.positive.bucket_counts)},
        "negative": {"offset": point.negative.offset, "bucket_counts": list(point.negative.bucket_counts)},
    })


def _exemplars(point) -> str:
    return to_json([
        {"time_unix_nano": e.time_unix_nano,
         "value": e.as_int if e.WhichOneof("value") == "as_int" else e.as_double,
         "filtered_attributes": attributes_plain(e.filtered_attributes),
         "trace_id": e.trace_id.hex(), "span_id": e.span_id.hex()}
        for e in point.exemplars
    ])
