from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.pause_state import PauseState
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    cancel_running: bool | Unset = False,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["cancel_running"] = cancel_running

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/indexes/{index_id}/indexing/pause".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PauseState | Problem | None:
    if response.status_code == 200:
        response_200 = PauseState.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[PauseState | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    cancel_running: bool | Unset = False,
) -> Response[PauseState | Problem]:
    """Pause Indexing

     Pause indexing of one index: no worker is handed its jobs from the next poll on; running jobs
    finish, or are cancelled with cancel_running. Pausing a paused index keeps its first time.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        cancel_running (bool | Unset): also cancel the index's running jobs Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PauseState | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        cancel_running=cancel_running,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    cancel_running: bool | Unset = False,
) -> PauseState | Problem | None:
    """Pause Indexing

     Pause indexing of one index: no worker is handed its jobs from the next poll on; running jobs
    finish, or are cancelled with cancel_running. Pausing a paused index keeps its first time.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        cancel_running (bool | Unset): also cancel the index's running jobs Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PauseState | Problem
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        cancel_running=cancel_running,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    cancel_running: bool | Unset = False,
) -> Response[PauseState | Problem]:
    """Pause Indexing

     Pause indexing of one index: no worker is handed its jobs from the next poll on; running jobs
    finish, or are cancelled with cancel_running. Pausing a paused index keeps its first time.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        cancel_running (bool | Unset): also cancel the index's running jobs Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PauseState | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        cancel_running=cancel_running,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    cancel_running: bool | Unset = False,
) -> PauseState | Problem | None:
    """Pause Indexing

     Pause indexing of one index: no worker is handed its jobs from the next poll on; running jobs
    finish, or are cancelled with cancel_running. Pausing a paused index keeps its first time.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        cancel_running (bool | Unset): also cancel the index's running jobs Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PauseState | Problem
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            cancel_running=cancel_running,
        )
    ).parsed
