"""HTTP route of ingestion."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from strata_core.domain.wire_types import IndexId, Name
from strata_frame.web.auth import Principal, Scope, require
from strata_frame.web.deps import State
from strata_frame.web.problems import problem_responses
from strata_indexer.ingest.body import read_limited
from strata_indexer.ingest.decode import ARROW_STREAM_TYPES, NDJSON_TYPES, media_kind
from strata_indexer.ingest.dependencies import IngestWrites
from strata_indexer.ingest.service import ingest_table, live_index

router = APIRouter(prefix="/v1/indexes", tags=["ingest"])


class IngestedSplit(BaseModel):
    split_id: str
    window_start: int
    num_rows: int = Field(description="Rows of the whole split, which may hold rows of other requests committed "
                                      "with this one (group commit).")
    rows_of_request: int = Field(description="Rows of this request in the split.")
    size_bytes: int
    uri: str


class IngestResponse(BaseModel):
    index_id: str
    split_ids: list[str] = Field(description="The published splits holding this request's rows, one per window.")
    splits: list[IngestedSplit] = Field(description="The published splits holding this request's rows, one per "
                                                    "window; a split may hold rows of other requests too.")
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
    state: State,
    ingest: IngestWrites,
    principal: Annotated[Principal, Depends(require(Scope.WRITER))],
    partition_id: Name | None = None,
    source_id: Name = "ingest-api",
) -> IngestResponse:
    """Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`): one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. Requests of the same index, partition and source that arrive while one of them is
    being written are written together (group commit): the answer comes once the group's splits are published,
    and a split may then hold rows of several requests. The partition defaults to the key's tenant, else
    `default`. A body that does not decode is a 400 naming the NDJSON line or the Arrow column, refused alone; a
    media type not listed here is a 415; a failed write (storage, PostgreSQL) fails every request of its group
    with the same 503, and nothing of the group is published."""
    partition = partition_id or principal.tenant or "default"
    principal.check_tenant(partition)
    index = await live_index(ingest, index_id)
    kind = media_kind(request.headers.get("content-type"))
    body = await read_limited(request, state.settings.max_ingest_bytes)
    outcome = await ingest_table(ingest, index, body, kind, partition_id=partition,
                                 source_id=source_id)
    return IngestResponse(
        index_id=index_id,
        split_ids=[s.split.split_id for s in outcome.splits],
        splits=[IngestedSplit(split_id=s.split.split_id, window_start=s.split.window_start,
                              num_rows=s.split.num_rows, rows_of_request=s.rows_of_request,
                              size_bytes=s.split.size_bytes, uri=s.split.uri) for s in outcome.splits],
        rows_received=outcome.rows_received,
        rows_written=outcome.rows_written,
        rows_dropped_late=outcome.rows_dropped_late,
        rows_null_timestamp=outcome.rows_null_timestamp,
    )
