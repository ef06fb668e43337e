"""How a worker executes one leased job, for any queue: as a Spark job through Spark Connect, interruptible by the
job's tag, or, when what the job reads is tiny, in a local process of the worker (`local_jobs.LocalJobPool`) with
the same kernel and checks, since a Spark job's fixed cost would be most of its time. A queue says what differs in
a `JobKind` (its span, its failure, how big a job is, how one runs on each path, what its result adds to the
span) and how an assignment becomes the kernel's spec; `runner.PollingRunner` calls `run` and `interrupt`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry import trace

from strata_core.object_requests import ObjectRequests
from strata_core.object_store_metrics import count_job_requests
from strata_core.observability.tracing import traced
from strata_frame.jobqueue.local_jobs import LocalJobPool
from strata_frame.spark.session import SparkSessionFactory

tracer = trace.get_tracer("strata")


class Assigned(Protocol):
    @property
    def job_id(self) -> str: ...
    @property
    def fencing_token(self) -> int: ...
    @property
    def spark_operation_tag(self) -> str: ...


A = TypeVar("A", bound=Assigned)
S = TypeVar("S")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Outcome(Protocol[R_co]):
    """A job's end as the kernel's runner reports it, on either path: its failure comes back as data."""

    @property
    def result(self) -> R_co | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def requests(self) -> ObjectRequests: ...


def _nothing_to_record(result: Any) -> None:
    return None


@dataclass(frozen=True, slots=True)
class JobKind(Generic[A, S, R]):
    # The span every run opens (its name is what dashboards and the tests look for).
    span: str
    # The job as a failure without a reason names it.
    noun: str
    # Raised when the kernel failed: its name leads the failure the job records (`spark.errors.failure_reason`).
    failed: type[Exception]
    # The bytes a job reads, against the local limit.
    input_bytes: Callable[[A], int]
    run_locally: Callable[[LocalJobPool, S], Outcome[R]]
    # One job per Spark task, under the operation tag an interrupt names.
    submit: Callable[[Any, list[S], str], list[Outcome[R]]]
    # What a result adds to the job's span before the runner reports it (phases timed where it ran).
    record: Callable[[R], None] = _nothing_to_record
    # Several local jobs in one call to a local process, one outcome each, in order (`JobExecutor.run_batch`).
    run_locally_batch: Callable[[LocalJobPool, list[S]], list[Outcome[R]]] | None = None


class JobExecutor(Generic[A, S, R]):
    def __init__(self, kind: JobKind[A, S, R], spec: Callable[[A], S], spark: SparkSessionFactory, *,
                 local: LocalJobPool | None = None, local_max_bytes: int = 0) -> None:
        self.kind = kind
        # The assignment as the kernel's input.
        self.spec = spec
        self.spark = spark
        self.local = local
        self.local_max_bytes = local_max_bytes
        self._traced_run = traced(kind.span)(self._run)

    def runs_locally(self, assignment: A) -> bool:
        """Whether the job is small enough that a Spark job's fixed cost would be most of its time."""
        return self.local is not None and self.kind.input_bytes(assignment) <= self.local_max_bytes

    def run(self, assignment: A) -> R:
        """Blocking: runs the job and waits for it (call from a worker thread)."""
        return self._traced_run(assignment)

    def _run(self, assignment: A) -> R:
        kind = self.kind
        local = self.runs_locally(assignment)
        trace.get_current_span().set_attribute("strata.engine", "local" if local else "spark")
        if local:
            outcome = kind.run_locally(self.local, self.spec(assignment))  # type: ignore[arg-type]
        else:
            [outcome] = kind.submit(self.spark.session(), [self.spec(assignment)], assignment.spark_operation_tag)
        return self._settled(outcome)

    def _settled(self, outcome: Outcome[R]) -> R:
        """A job's result, its object-store requests counted and the result recorded on the current span; a failure
        raised as the queue's `failed`."""
        count_job_requests(outcome.requests)
        if outcome.result is None:
            raise self.kind.failed(outcome.error or f"{self.kind.noun} failed without a reason")
        self.kind.record(outcome.result)
        return outcome.result

    def runs_in_batches(self) -> bool:
        return self.local is not None and self.kind.run_locally_batch is not None

    def run_batch(self, assignments: Sequence[A]) -> list[tuple[R | Exception, ObjectRequests]]:
        """Blocking: jobs that each `runs_locally`, in one call to a local process, one after another; each job's
        result or failure (the queue's `failed`), and what it cost the object store. Each job gets its span, as
        `run` gives it, spanning the batch. A process that dies fails every job of the batch."""
        kind = self.kind
        spans = [tracer.start_span(kind.span, attributes={
            "strata.job_id": a.job_id, "strata.fencing_token": a.fencing_token, "strata.engine": "local",
            "strata.batch": len(assignments)}) for a in assignments]
        try:
            outcomes = kind.run_locally_batch(self.local, [self.spec(a) for a in assignments])  # type: ignore[misc,arg-type]
        except Exception as exc:  # noqa: BLE001 - the pool's failure is each job's
            for span in spans:
                span.record_exception(exc)
                span.end()
            return [(exc, ObjectRequests()) for _ in assignments]
        out: list[tuple[R | Exception, ObjectRequests]] = []
        for span, outcome in zip(spans, outcomes, strict=True):
            with trace.use_span(span, end_on_exit=True):
                try:
                    out.append((self._settled(outcome), outcome.requests))
                except kind.failed as failure:
                    out.append((failure, outcome.requests))
        return out

    def close(self) -> None:
        if self.local is not None:
            self.local.close()

    def interrupt(self, assignment: A) -> None:
        # A local job is not interrupted: it is small (seconds at most), and what a stale token wrote is never
        # published (each queue's collector removes it: compaction's garbage collector, indexing's janitor).
        if not self.runs_locally(assignment):
            self.spark.session().interruptTag(assignment.spark_operation_tag)
