"""Bodies of the deletes API."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

DeleteStatus = Literal["pending", "running", "succeeded", "failed", "cancelled"]


class DeleteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    where: Annotated[str, StringConstraints(min_length=1, max_length=20_000)] = Field(
        description="A SQL boolean expression over the index's columns (the WHERE clause of a query): the rows "
                    "where it is TRUE are deleted; a row where it is NULL is kept.")
    partition_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = Field(
        None, description="Only this partition (tenant). A tenant-bound key deletes in its own partition only.")
    reason: Annotated[str, StringConstraints(max_length=2_000)] | None = None


class DeleteCutoff(BaseModel):
    """The point of the index's publication history the delete was accepted at: it covers the splits published
    up to there (rows ingested after it are untouched)."""

    accepted_at: datetime
    plan_generation: int


class DeleteProgress(BaseModel):
    splits_covered: int
    splits_done: int
    splits_rewriting: int
    fraction: float


class ReceiptSplit(BaseModel):
    split_id: str
    state: Literal["pending", "rewriting", "rewritten", "merged", "unchanged"] = Field(
        description="`unchanged`: the rewrite found no row the delete matches, the split stays published as it is "
                    "(no new split, rows_removed 0).")
    new_split_ids: list[str]
    rows_before: int
    rows_removed: int | None
    inherited_from: str | None = Field(None, description="The covered split this one replaced (a rewrite's "
                                                         "output that a later delete covers in turn).")
    finished_at: datetime | None


class DeleteReceipt(BaseModel):
    """What the delete did, once it succeeded: every split rewritten (old id, new ids, rows before, rows removed)
    or left unchanged (no row matched), the artifacts built for the new splits so far, the total rows removed,
    and when it completed."""

    splits: list[ReceiptSplit]
    splits_rewritten: int = Field(description="Splits replaced by a rewrite (their matching rows removed).")
    splits_unchanged: int = Field(description="Covered splits holding no matching row: kept as they are, "
                                              "nothing written.")
    rows_removed: int
    artifacts_rebuilt: int
    completed_at: datetime | None


class DeleteOut(BaseModel):
    delete_id: str
    index_id: str
    partition_id: str | None
    where: str
    predicate: str = Field(description="The condition as applied (negation normal form).")
    reason: str | None
    requested_by: str | None
    status: DeleteStatus
    cutoff: DeleteCutoff
    progress: DeleteProgress
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    receipt: DeleteReceipt | None = None


class DeletePage(BaseModel):
    index_id: str
    deletes: list[DeleteOut]


class VerifiedSplit(BaseModel):
    split_id: str
    matching_rows: int
    published_after_delete: bool = Field(description="Published after the delete was accepted: its matching "
                                                     "rows were ingested later, and the delete does not cover "
                                                     "them.")


class DeleteVerification(BaseModel):
    delete_id: str
    verified: bool = Field(description="No split published before the delete holds a row it matches.")
    splits_examined: int
    splits_read: int
    matching_rows: int = Field(description="Rows matching the condition in splits published before the delete.")
    splits_with_matches: list[VerifiedSplit]
    verified_at: datetime
