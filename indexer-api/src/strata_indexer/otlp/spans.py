"""An ExportTraceServiceRequest as rows of the spans schema (schemas.SPAN_FIELDS), one row per span; its events
and links as JSON arrays, their ids in hex and their attributes as plain JSON."""

from __future__ import annotations

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from strata_core.domain.fields import FieldType
from strata_indexer.otlp.schemas import RESOURCE_COLUMNS, SPAN_FIELDS
from strata_indexer.otlp.table import Columns
from strata_indexer.otlp.values import Resource, attributes_json, attributes_plain, to_json

# SPAN_KIND_SERVER -> "server", STATUS_CODE_ERROR -> "error": what people type in a WHERE.
_KINDS = {number: name.removeprefix("SPAN_KIND_").lower() for name, number in Span.SpanKind.items()}
_STATUS_CODES = {number: name.removeprefix("STATUS_CODE_").lower() for name, number in Status.StatusCode.items()}


def spans_table(request: ExportTraceServiceRequest, fields: dict[str, FieldType]) -> pa.Table:
    columns = Columns([name for name, _ in SPAN_FIELDS], fields)
    promoted = columns.promoted
    lists = columns.lists
    start, end, duration = lists["start_time_unix_nano"], lists["end_time_unix_nano"], lists["duration_nanos"]
    trace_id, span_id, parent = lists["trace_id"], lists["span_id"], lists["parent_span_id"]
    trace_state, flags, name, kind = lists["trace_state"], lists["flags"], lists["name"], lists["kind"]
    status_code, status_message = lists["status_code"], lists["status_message"]
    attributes, events, links = lists["attributes"], lists["events"], lists["links"]
    dropped_attributes, dropped_events, dropped_links = (
        lists["dropped_attributes_count"], lists["dropped_events_count"], lists["dropped_links_count"])
    for resource_spans in request.resource_spans:
        resource = Resource(resource_spans.resource.attributes, RESOURCE_COLUMNS)
        for scope_spans in resource_spans.scope_spans:
            spans = scope_spans.spans
            if not spans:
                continue
            columns.repeat(resource, scope_spans.scope.name, scope_spans.scope.version, len(spans))
            for span in spans:
                start.append(span.start_time_unix_nano)
                end.append(span.end_time_unix_nano)
                duration.append(span.end_time_unix_nano - span.start_time_unix_nano
                                if span.start_time_unix_nano and span.end_time_unix_nano else None)
                trace_id.append(span.trace_id.hex() or None)
                span_id.append(span.span_id.hex() or None)
                parent.append(span.parent_span_id.hex() or None)
                trace_state.append(span.trace_state or None)
                flags.append(span.flags)
                name.append(span.name)
                kind.append(_KINDS.get(span.kind, str(span.kind)))
                status = span.status
                status_code.append(_STATUS_CODES.get(status.code, str(status.code)))
                status_message.append(status.message or None)
                attributes.append(attributes_json(span.attributes))
                events.append(_events(span) if span.events else None)
                links.append(_links(span) if span.links else None)
                dropped_attributes.append(span.dropped_attributes_count)
                dropped_events.append(span.dropped_events_count)
                dropped_links.append(span.dropped_links_count)
                if promoted:
                    promoted.add(span.attributes)
    return columns.table(fields, "start_time_unix_nano")


def _events(span: Span) -> str:
    return to_json([
        {"time_unix_nano": event.time_unix_nano, "name": event.name,
         "attributes": attributes_plain(event.attributes),
         "dropped_attributes_count": event.dropped_attributes_count}
        for event in span.events
    ])


def _links(span: Span) -> str:
    return to_json([
        {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex(), "trace_state": link.trace_state,
         "flags": link.flags, "attributes": attributes_plain(link.attributes),
         "dropped_attributes_count": link.dropped_attributes_count}
        for link in span.links
    ])
