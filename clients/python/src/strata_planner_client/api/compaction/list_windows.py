from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.window_page import WindowPage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 500,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_window_start_gte: int | None | Unset
    if isinstance(window_start_gte, Unset):
        json_window_start_gte = UNSET
    else:
        json_window_start_gte = window_start_gte
    params["window_start_gte"] = json_window_start_gte

    json_window_start_lt: int | None | Unset
    if isinstance(window_start_lt, Unset):
        json_window_start_lt = UNSET
    else:
        json_window_start_lt = window_start_lt
    params["window_start_lt"] = json_window_start_lt

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/indexes/{index_id}/windows".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | WindowPage | None:
    if response.status_code == 200:
        response_200 = WindowPage.from_dict(response.json())

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
) -> Response[Problem | WindowPage]:
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
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 500,
) -> Response[Problem | WindowPage]:
    """List Windows

     Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 500.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WindowPage]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 500,
) -> Problem | WindowPage | None:
    """List Windows

     Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 500.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WindowPage
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 500,
) -> Response[Problem | WindowPage]:
    """List Windows

     Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 500.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WindowPage]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 500,
) -> Problem | WindowPage | None:
    """List Windows

     Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 500.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WindowPage
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            window_start_gte=window_start_gte,
            window_start_lt=window_start_lt,
            limit=limit,
        )
    ).parsed
