from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.split_page import SplitPage
from ...models.split_state import SplitState
from ...types import UNSET, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    state: list[SplitState] | None | Unset = UNSET,
    partition_id: None | str | Unset = UNSET,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_state: list[str] | None | Unset
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, list):
        json_state = []
        for state_type_0_item_data in state:
            state_type_0_item = state_type_0_item_data.value
            json_state.append(state_type_0_item)

    else:
        json_state = state
    params["state"] = json_state

    json_partition_id: None | str | Unset
    if isinstance(partition_id, Unset):
        json_partition_id = UNSET
    else:
        json_partition_id = partition_id
    params["partition_id"] = json_partition_id

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

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/indexes/{index_id}/splits".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SplitPage | None:
    if response.status_code == 200:
        response_200 = SplitPage.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

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
) -> Response[Problem | SplitPage]:
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
    state: list[SplitState] | None | Unset = UNSET,
    partition_id: None | str | Unset = UNSET,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | SplitPage]:
    """List Splits

     Splits of an index in (window_start, split_id) order, filtered by window range, state and partition;
    a
    tenant-bound key sees only its own partition.

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        index_id (str):
        state (list[SplitState] | None | Unset):
        partition_id (None | str | Unset):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SplitPage]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        state=state,
        partition_id=partition_id,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    state: list[SplitState] | None | Unset = UNSET,
    partition_id: None | str | Unset = UNSET,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Problem | SplitPage | None:
    """List Splits

     Splits of an index in (window_start, split_id) order, filtered by window range, state and partition;
    a
    tenant-bound key sees only its own partition.

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        index_id (str):
        state (list[SplitState] | None | Unset):
        partition_id (None | str | Unset):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SplitPage
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        state=state,
        partition_id=partition_id,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    state: list[SplitState] | None | Unset = UNSET,
    partition_id: None | str | Unset = UNSET,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | SplitPage]:
    """List Splits

     Splits of an index in (window_start, split_id) order, filtered by window range, state and partition;
    a
    tenant-bound key sees only its own partition.

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        index_id (str):
        state (list[SplitState] | None | Unset):
        partition_id (None | str | Unset):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SplitPage]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        state=state,
        partition_id=partition_id,
        window_start_gte=window_start_gte,
        window_start_lt=window_start_lt,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    state: list[SplitState] | None | Unset = UNSET,
    partition_id: None | str | Unset = UNSET,
    window_start_gte: int | None | Unset = UNSET,
    window_start_lt: int | None | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Problem | SplitPage | None:
    """List Splits

     Splits of an index in (window_start, split_id) order, filtered by window range, state and partition;
    a
    tenant-bound key sees only its own partition.

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        index_id (str):
        state (list[SplitState] | None | Unset):
        partition_id (None | str | Unset):
        window_start_gte (int | None | Unset):
        window_start_lt (int | None | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SplitPage
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            state=state,
            partition_id=partition_id,
            window_start_gte=window_start_gte,
            window_start_lt=window_start_lt,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
