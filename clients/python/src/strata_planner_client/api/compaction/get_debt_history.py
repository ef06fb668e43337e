from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.debt_history import DebtHistory
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    minutes: int | Unset = 15,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["minutes"] = minutes

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/indexes/{index_id}/debt/history".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DebtHistory | Problem | None:
    if response.status_code == 200:
        response_200 = DebtHistory.from_dict(response.json())

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
) -> Response[DebtHistory | Problem]:
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
    minutes: int | Unset = 15,
) -> Response[DebtHistory | Problem]:
    """Get Debt History

     The index's debt sampled every 10 s by planner-api's metrics refresh, oldest first (an hour is
    kept).

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        minutes (int | Unset): how far back Default: 15.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DebtHistory | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        minutes=minutes,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    minutes: int | Unset = 15,
) -> DebtHistory | Problem | None:
    """Get Debt History

     The index's debt sampled every 10 s by planner-api's metrics refresh, oldest first (an hour is
    kept).

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        minutes (int | Unset): how far back Default: 15.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DebtHistory | Problem
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        minutes=minutes,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    minutes: int | Unset = 15,
) -> Response[DebtHistory | Problem]:
    """Get Debt History

     The index's debt sampled every 10 s by planner-api's metrics refresh, oldest first (an hour is
    kept).

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        minutes (int | Unset): how far back Default: 15.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DebtHistory | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        minutes=minutes,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    minutes: int | Unset = 15,
) -> DebtHistory | Problem | None:
    """Get Debt History

     The index's debt sampled every 10 s by planner-api's metrics refresh, oldest first (an hour is
    kept).

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):
        minutes (int | Unset): how far back Default: 15.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DebtHistory | Problem
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            minutes=minutes,
        )
    ).parsed
