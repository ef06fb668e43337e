"""An ExportLogsServiceRequest as rows of the logs schema (schemas.LOG_FIELDS), one row per log record."""

from __future__ import annotations

import pyarrow as pa
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from strata_core.domain.fields import FieldType
from strata_indexer.otlp.schemas import LOG_FIELDS, RESOURCE_COLUMNS
from strata_indexer.otlp.table import Columns
from strata_indexer.otlp.values import Resource, attributes_json, body_of


def logs_table(request: ExportLogsServiceRequest, fields: dict[str, FieldType]) -> pa.Table:
    """A record's time is its `time_unix_nano`, else when it was observed (the specification's rule for a record
    whose source gave no time)."""
    columns = Columns([name for name, _ in LOG_FIELDS], fields)
    promoted = columns.promoted
    lists = columns.lists
    lists["_time"] = []
    time_, observed, effective = lists["time_unix_nano"], lists["observed_time_unix_nano"], lists["_time"]
    severity_number, severity_text = lists["severity_number"], lists["severity_text"]
    body, body_type, trace_id, span_id = lists["body"], lists["body_type"], lists["trace_id"], lists["span_id"]
    flags, event_name, attributes, dropped = (lists["flags"], lists["event_name"], lists["attributes"],
                                              lists["dropped_attributes_count"])
    for resource_logs in request.resource_logs:
        resource = Resource(resource_logs.resource.attributes, RESOURCE_COLUMNS)
        for scope_logs in resource_logs.scope_logs:
            records = scope_logs.log_records
            if not records:
                continue
            columns.repeat(resource, scope_logs.scope.name, scope_logs.scope.version, len(records))
            for record in records:
                time_.append(record.time_unix_nano)
                observed.append(record.observed_time_unix_nano)
                effective.append(record.time_unix_nano or record.observed_time_unix_nano)
                severity_number.append(record.severity_number)
                severity_text.append(record.severity_text or None)
                text, kind = body_of(record.body)
                body.append(text)
                body_type.append(kind)
                trace_id.append(record.trace_id.hex() or None)
                span_id.append(record.span_id.hex() or None)
                flags.append(record.flags)
                event_name.append(record.event_name or None)
                attributes.append(attributes_json(record.attributes))
                dropped.append(record.dropped_attributes_count)
                if promoted:
                    promoted.add(record.attributes)
    return columns.table(fields, "_time")
