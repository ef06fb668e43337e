"""ORM model of the lease every replica contends for before running a periodic pass (`web/singleton.py`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.models import Base


class BackgroundPassRow(Base):
    """One named pass (e.g. `gc`, `janitor`, `retention <index_uid>`): who holds or last held it, until when the
    holder's lease runs, and how its last run went. Times are PostgreSQL's clock, never a replica's."""

    __tablename__ = "background_passes"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    # host:pid:start of the replica that holds the pass, or held it last once the lease is given back.
    holder: Mapped[str | None] = mapped_column(String(300), nullable=True)
    # Set while a run is under way (renewed by its holder), NULL once it finished.
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The last run's error, NULL when it succeeded.
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
