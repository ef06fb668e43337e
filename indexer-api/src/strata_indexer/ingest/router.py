"""HTTP route of ingestion."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from strata_indexer.ingest.body import read_limited
from strata_indexer.ingest.decode import ARROW_STREAM_TYPES, NDJSON_TYPES, media_kind
from strata_indexer.ingest.service import ingest_table
from strata_shared.domain.wire_types import IndexId, Name
from strata_shared.metastore.repositories import load_live_index
from strata_shared.web.auth import Principal, Scope, require
from strata_shared.web.deps import Session, State
from strata_shared.web.problems import problem_responses

router = APIRouter(prefix="/v1/indexes", tags=["ingest"])


class IngestedSplit(BaseModel):
    split_id: str
    window_start: int
    num_rows: int
    size_bytes: int
    uri: str


class IngestResponse(BaseModel):
    index_id: str
    split_ids: list[str]
    splits: list[IngestedSplit]
    rows_received: int
    rows_written: int
    rows_dropped_late: int
    rows_null_timestamp: int


# The body is read as a stream (never buffered whole by the framework), so it is documented here: an Arrow IPC
# stream under either of its media types, or NDJSON text.
_BINARY = {"schema": {"type": "string", "format": "binary"}}
_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            **{media_type: _BINARY for media_type in ARROW_STREAM_TYPES},
            NDJSON_TYPES[0]: {"schema": {"type": "string"}},
        },
    }
}


@router.post("/{index_id}/ingest", response_model=IngestResponse, openapi_extra=_BODY_DOC,
             responses=problem_responses(400, 404, 413, 415))
async def ingest(
    index_id: IndexId,
    request: Request,
    session: Session,
    state: State,
    principal: Annotated[Principal, Depends(require(Scope.WRITER))],
    partition_id: Name | None = None,
    source_id: Name = "ingest-api",
) -> IngestResponse:
    """Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`): one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. The partition defaults to the key's tenant, else `default`. A body that does not
    decode is a 400 naming the NDJSON line or the Arrow column; a media type not listed here is a 415."""
    partition = partition_id or principal.tenant or "default"
    principal.check_tenant(partition)
    index = await load_live_index(session, index_id)
    await session.commit()  # end the read transaction now: the ingest below must not hold a connection idle
    kind = media_kind(request.headers.get("content-type"))
    body = await read_limited(request, state.settings.max_ingest_bytes)
    outcome = await ingest_table(state, index, body, kind, partition_id=partition, source_id=source_id)
    return IngestResponse(
        index_id=index_id,
        split_ids=[s.split_id for s in outcome.splits],
        splits=[IngestedSplit(split_id=s.split_id, window_start=s.window_start, num_rows=s.num_rows,
                              size_bytes=s.size_bytes, uri=s.uri) for s in outcome.splits],
        rows_received=outcome.rows_received,
        rows_written=outcome.rows_written,
        rows_dropped_late=outcome.rows_dropped_late,
        rows_null_timestamp=outcome.rows_null_timestamp,
    )
