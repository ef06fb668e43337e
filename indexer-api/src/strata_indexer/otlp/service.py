"""OTLP export use case: an Export*ServiceRequest into its signal's index, through the ingest path, answered with
the specification's Export*ServiceResponse.

The index is the tenant's default one for the signal (schemas.default_index_id), or the one the request names;
either is created with the signal's default schema on first use. An index named by the request may declare more
than the default schema, never less or otherwise: every column the signal's rows carry must be there, with its
type, so nothing sent is silently left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as logs_service
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_service
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_service
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import IndexConfig, IndexSettings
from strata_core.errors import BadRequest, Conflict, NotFound
from strata_indexer.indexes.service import create_index
from strata_indexer.ingest.service import Ingest, ingest_decoded
from strata_indexer.otlp import raw, wire
from strata_indexer.otlp.logs import logs_table
from strata_indexer.otlp.metrics import metrics_table
from strata_indexer.otlp.schemas import FIELDS, Signal, default_settings
from strata_indexer.otlp.spans import spans_table
from strata_metastore.models import IndexRow
from strata_metastore.repositories import load_live_index

SOURCE_ID = "otlp"


@dataclass(frozen=True, slots=True)
class SignalWire:
    request: type[Message]
    # raw.py's copy of `request`, what the signal's table is built from.
    raw_request: type[Message]
    response: type[Message]
    # The request's items (records, spans, data points), counted before decoding them into rows.
    count: Callable[[Message], int]
    table: Callable[[Message, dict[str, FieldType]], pa.Table]
    # The Export*PartialSuccess field counting what was not stored.
    rejected_field: str
    noun: str


SIGNALS: dict[Signal, SignalWire] = {
    Signal.LOGS: SignalWire(
        logs_service.ExportLogsServiceRequest, raw.LogsRequest, logs_service.ExportLogsServiceResponse,
        lambda r: sum(len(s.log_records) for rl in r.resource_logs for s in rl.scope_logs),
        logs_table, "rejected_log_records", "log records"),
    Signal.TRACES: SignalWire(
        trace_service.ExportTraceServiceRequest, raw.TraceRequest, trace_service.ExportTraceServiceResponse,
        lambda r: sum(len(s.spans) for rs in r.resource_spans for s in rs.scope_spans),
        spans_table, "rejected_spans", "spans"),
    Signal.METRICS: SignalWire(
        metrics_service.ExportMetricsServiceRequest, raw.MetricsRequest,
        metrics_service.ExportMetricsServiceResponse,
        lambda r: sum(len(getattr(m, m.WhichOneof("data")).data_points) for rm in r.resource_metrics
                      for s in rm.scope_metrics for m in s.metrics if m.WhichOneof("data")),
        metrics_table, "rejected_data_points", "data points"),
}


async def export(
    ingest: Ingest,
    session: AsyncSession,
    signal: Signal,
    message: Message,
    *,
    index_id: str,
    partition_id: str,
) -> Message:
    """Stores the request's items and answers how many were refused (late data) in its partial success. Nothing
    is written for a request that does not decode, and a request of no items touches nothing."""
    spec = SIGNALS[signal]
    response = spec.response()
    if not spec.count(message):
        return response
    index = await _index_for(session, signal, index_id)
    await session.commit()  # the read (or create) transaction ends here: the ingest below must not hold it

    def decode(settings: IndexSettings) -> pa.Table:
        return spec.table(message, settings.field_types())

    outcome = await ingest_decoded(ingest, index, decode, partition_id=partition_id,
                                   source_id=SOURCE_ID)
    if outcome.rows_dropped_late:
        late = IndexSettings.model_validate(index.config).late_data_acceptance_secs
        setattr(response.partial_success, spec.rejected_field, outcome.rows_dropped_late)
        response.partial_success.error_message = (
            f"{outcome.rows_dropped_late} {spec.noun} are older than index {index_id!r} accepts "
            f"(late_data_acceptance_secs {late}) and were dropped")
    return response


async def _index_for(session: AsyncSession, signal: Signal, index_id: str) -> IndexRow:
    try:
        index = await load_live_index(session, index_id)
    except NotFound:
        config = IndexConfig(index_id=index_id, **default_settings(signal).model_dump())
        try:
            await create_index(session, config)
        except Conflict:
            pass  # another request created it first: the same index
        index = await load_live_index(session, index_id)
    _check_fits(signal, index_id, IndexSettings.model_validate(index.config))
    return index


def _check_fits(signal: Signal, index_id: str, settings: IndexSettings) -> None:
    declared = settings.field_types()
    misfits = [f"{name} ({kind})" for name, kind in FIELDS[signal] if declared.get(name) != FieldType(kind)]
    if misfits:
        raise BadRequest(f"index {index_id!r} cannot hold OTLP {signal}: it lacks or types otherwise the columns "
                         f"{', '.join(misfits)}")
    if settings.timestamp_field != "timestamp":
        raise BadRequest(f"index {index_id!r} cannot hold OTLP {signal}: its timestamp field must be 'timestamp'")


def decode_request(signal: Signal, body: bytes, content_type: str | None, content_encoding: str | None,
                   max_bytes: int) -> tuple[Message, str]:
    """The request message and its encoding (which the answer uses too)."""
    encoding = wire.encoding_of(content_type)
    data = wire.inflate(body, content_encoding, max_bytes)
    spec = SIGNALS[signal]
    return wire.parse(spec.request, spec.raw_request, data, encoding), encoding
