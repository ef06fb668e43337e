"""A small HTTP client for the CLI: finds the running stack and a key with the needed scope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from strata_core.config import Settings
from strata_services.local import STATE_FILE
from strata_services.local.keys import key_with_scope, local_keys

if TYPE_CHECKING:
    import pyarrow as pa

# Which API serves each job queue.
QUEUE_API = {"compaction": "planner-api", "indexing": "indexer-api"}


class CliError(Exception):
    pass


def stack_state(home: Path) -> dict | None:
    path = home / STATE_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text())


def api_url(settings: Settings, name: str) -> str:
    state = stack_state(settings.home)
    if state and name in state.get("urls", {}):
        return state["urls"][name]
    return settings.api_base_url(name)


def api_key(settings: Settings, *scopes: str) -> str:
    if settings.api_key:
        return settings.api_key
    keys = local_keys(settings)
    key = key_with_scope(keys, *scopes) if keys else None
    if not key:
        raise CliError(f"no API key with scope {'/'.join(scopes)}: set STRATA_API_KEY, or run `strata up` to "
                       f"generate {settings.home / 'api-keys.json'}")
    return key


def problem_text(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{response.status_code} {body.get('title', '')}: {body.get('detail', response.text)}"
    except ValueError:
        return f"{response.status_code}: {response.text[:500]}"


def arrow_ipc(table: pa.Table) -> bytes:
    """An ingest body: the table as an Arrow IPC stream."""
    import pyarrow as pa  # here: most commands send no Arrow, and pyarrow is a fifth of a command's start
    import pyarrow.ipc as ipc

    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=64 * 1024)
    return sink.getvalue().to_pybytes()


def call(settings: Settings, api: str, method: str, path: str, *scopes: str, what: str, **kwargs) -> Any:
    """One request to one API of the stack with a key holding one of `scopes`; its JSON answer, or a CliError
    naming `what` failed and the problem the API answered. (Unreachable stacks are reported by the CLI's main.)"""
    headers = {"Authorization": f"Bearer {api_key(settings, *scopes)}", **kwargs.pop("headers", {})}
    with httpx.Client(base_url=api_url(settings, api), headers=headers, timeout=kwargs.pop("timeout", 60)) as http:
        response = http.request(method, path, **kwargs)
    if response.status_code >= 400:
        raise CliError(f"{what} failed: {problem_text(response)}")
    return response.json() if response.content else None
