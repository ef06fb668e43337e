"""The commit log's tables (migration 0017), mapped so the models and the migrations describe one schema. The
code reads and writes them in SQL (`commit_log.py`, `commit_log_passes.py`): they hold JSON text and transaction
ids, never rows an API returns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Index, Text, func, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import UserDefinedType

from strata_metastore.models import Base


class Xid8(UserDefinedType):
    """PostgreSQL's 64-bit transaction id: which transaction captured a change."""

    cache_ok = True

    def get_col_spec(self, **_kw: Any) -> str:
        return "xid8"


class CommitLogChangeRow(Base):
    """One statement's rows of a logged table, captured by the triggers for its transaction's entry."""

    __tablename__ = "commit_log_changes"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    xid: Mapped[Any] = mapped_column(Xid8, server_default=text("pg_current_xact_id()"))
    table_name: Mapped[str] = mapped_column(Text)
    op: Mapped[str] = mapped_column(Text)
    rows: Mapped[Any] = mapped_column(JSON)

    __table_args__ = (Index("ix_commit_log_changes_xid", "xid"),)


class CommitLogRow(Base):
    """A numbered entry: its transaction's captures. One restored by a rebuild names no transaction: its changes
    are the bucket's object."""

    __tablename__ = "commit_log"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    xid: Mapped[Any | None] = mapped_column(Xid8, unique=True, nullable=True)
    committed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class CommitLogCheckpointRow(Base):
    """The checkpoint the entries in `commit_log` follow."""

    __tablename__ = "commit_log_checkpoints"

    seq: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    missing: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), server_default="{}")
    written_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
