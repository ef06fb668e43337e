"""What each operation of an API cost the object store, in its /metrics: requests by kind and bytes by direction,
labelled by the operation (query, merge, artifact_build, gc, janitor, ingest, ...)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from prometheus_client import CollectorRegistry, Counter
from pydantic import BaseModel

from strata_core.domain.wire_types import NonNegativeInt64
from strata_core.object_requests import REQUEST_KINDS, Meter, ObjectRequests, current_meter, metered


class ObjectRequestsBody(BaseModel):
    """Object-store requests as S3 bills them, and the bytes they moved."""

    gets: NonNegativeInt64
    puts: NonNegativeInt64
    lists: NonNegativeInt64
    heads: NonNegativeInt64
    deletes: NonNegativeInt64
    bytes_read: NonNegativeInt64
    bytes_written: NonNegativeInt64

    def requests(self) -> ObjectRequests:
        return ObjectRequests(**self.model_dump())


class ObjectStoreMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("strata_object_store_requests", "Object-store requests as S3 bills them, by the "
                                "operation that made them and their kind (get, put, list, head, delete)",
                                ["operation", "kind"], registry=registry)
        self.bytes = Counter("strata_object_store_bytes", "Bytes read from and written to the object store, by "
                             "operation and direction (read, written)", ["operation", "direction"],
                             registry=registry)

    def record(self, operation: str, requests: ObjectRequests) -> None:
        for kind, count in zip(REQUEST_KINDS, (requests.gets, requests.puts, requests.lists, requests.heads,
                                               requests.deletes), strict=True):
            if count:
                self.requests.labels(operation, kind).inc(count)
        if requests.bytes_read:
            self.bytes.labels(operation, "read").inc(requests.bytes_read)
        if requests.bytes_written:
            self.bytes.labels(operation, "written").inc(requests.bytes_written)

    @contextmanager
    def measure(self, operation: str) -> Iterator[Meter]:
        """Count the block's requests (made here, or by workers whose counts it adds) as `operation`'s."""
        with metered() as meter:
            try:
                yield meter
            finally:
                self.record(operation, meter.snapshot())


def count_job_requests(requests: ObjectRequests) -> None:
    """A job's requests, measured in the process that ran it (a Spark task, a local process), on the current span
    and in the open meter: the runner's, which reports them with the job's end to the API that owns the job, and
    that API adds them to its /metrics (`record_reported`), whether the runner runs inside it or in a standalone
    `strata worker`."""
    span = trace.get_current_span()
    for name, count in requests.as_dict().items():
        span.set_attribute(f"strata.object_store.{name}", count)
    if (meter := current_meter()) is not None:
        meter.add_requests(requests)
