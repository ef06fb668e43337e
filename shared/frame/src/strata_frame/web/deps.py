"""FastAPI dependencies that hand route functions the app's state and a database session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from strata_frame.web.state import AppState


async def app_state(request: Request) -> AppState:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread, a hop on every
    # request of every route that asks for the state.
    return request.app.state.strata


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """One session per request. Services commit their own units of work; anything left open is rolled back."""
    async with request.app.state.strata.sessions() as session:
        try:
            yield session
        finally:
            if session.in_transaction():
                await session.rollback()


D = TypeVar("D", bound=Callable[..., object])


def on_app_state(dependency: D) -> D:
    """Marks a dependency that hands routes what an API built on the app's state (its services): a route that uses
    it answers 503 when PostgreSQL, Spark or storage is down, as one taking the state does, and its OpenAPI
    operation says so (`web/openapi.py`)."""
    dependency.uses_app_state = True  # type: ignore[attr-defined]
    return dependency


# What route functions declare to receive them.
Session = Annotated[AsyncSession, Depends(db_session)]
State = Annotated[AppState, Depends(app_state)]
