"""Strings PostgreSQL cannot store are refused at the door. A NUL character (a text column cannot hold one) or a
lone surrogate (no UTF-8 encoding) in a path parameter, a query parameter the route declares, or anywhere in a
JSON body (keys too) answers 422 naming the field, before the route runs. One app-wide dependency, so no route
can forget it and no route repeats it."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import Message
from typing import Any

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from strata_core.errors import InvalidInput


def why_unstorable(text: str) -> str | None:
    """Why PostgreSQL would refuse `text`, or None when it can be stored."""
    if "\x00" in text:
        return "contains a NUL character (U+0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate, which is not valid Unicode"
    return None


def unstorable_in(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(field path, reason) for every unstorable string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        if (reason := why_unstorable(value)) is not None:
            yield path, reason
    elif isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if (reason := why_unstorable(str(key))) is not None:
                yield path or "body", f"has a key that {reason}"
            else:
                yield from unstorable_in(item, child)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from unstorable_in(item, f"{path}.{position}" if path else str(position))


def _declared_query_params(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _declared_query_params(sub)
    return names


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return True  # FastAPI reads a body without a content type as JSON
    message = Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


async def refuse_unstorable_text(request: Request) -> None:
    """App-wide FastAPI dependency. It runs after FastAPI has parsed the JSON body (so `request.json()` is the
    cached result) and before parameters and the body are validated."""
    route = request.scope.get("route")
    problems = [(name, reason) for name, value in request.path_params.items()
                if (reason := why_unstorable(value)) is not None]
    if isinstance(route, APIRoute):
        declared = _declared_query_params(route.dependant)
        problems += [(name, reason) for name, value in request.query_params.multi_items()
                     if name in declared and (reason := why_unstorable(value)) is not None]
        if route.body_field is not None and _is_json(request.headers.get("content-type")) and await request.body():
            problems += list(unstorable_in(await request.json(), ""))
    if problems:
        raise InvalidInput.fields(problems)
