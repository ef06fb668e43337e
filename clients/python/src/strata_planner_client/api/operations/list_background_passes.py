from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.background_pass_list import BackgroundPassList
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/maintenance/passes",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BackgroundPassList | Problem | None:
    if response.status_code == 200:
        response_200 = BackgroundPassList.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[BackgroundPassList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[BackgroundPassList | Problem]:
    """List Background Passes

     Every periodic pass that runs once across the replicas (garbage collection, retention, debt samples,
    the
    janitor), by name: its holder, whether it runs now, and its last start, finish and error. Times are
    PostgreSQL's clock.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BackgroundPassList | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> BackgroundPassList | Problem | None:
    """List Background Passes

     Every periodic pass that runs once across the replicas (garbage collection, retention, debt samples,
    the
    janitor), by name: its holder, whether it runs now, and its last start, finish and error. Times are
    PostgreSQL's clock.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BackgroundPassList | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[BackgroundPassList | Problem]:
    """List Background Passes

     Every periodic pass that runs once across the replicas (garbage collection, retention, debt samples,
    the
    janitor), by name: its holder, whether it runs now, and its last start, finish and error. Times are
    PostgreSQL's clock.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BackgroundPassList | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> BackgroundPassList | Problem | None:
    """List Background Passes

     Every periodic pass that runs once across the replicas (garbage collection, retention, debt samples,
    the
    janitor), by name: its holder, whether it runs now, and its last start, finish and error. Times are
    PostgreSQL's clock.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BackgroundPassList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
