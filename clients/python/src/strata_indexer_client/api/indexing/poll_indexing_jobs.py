from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.indexing_poll_request import IndexingPollRequest
from ...models.indexing_poll_response import IndexingPollResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: IndexingPollRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/indexing/poll",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> IndexingPollResponse | Problem | None:
    if response.status_code == 200:
        response_200 = IndexingPollResponse.from_dict(response.json())

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
) -> Response[IndexingPollResponse | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: IndexingPollRequest,
) -> Response[IndexingPollResponse | Problem]:
    """Poll Indexing Jobs

     The worker protocol: report status updates (each fenced by its token) and free capacity, receive
    files to index with leases and fencing tokens. Stale updates come back with accepted=false.

    **Authorization**: an API key with the `worker` scope (or `admin`).

    Args:
        body (IndexingPollRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexingPollResponse | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: IndexingPollRequest,
) -> IndexingPollResponse | Problem | None:
    """Poll Indexing Jobs

     The worker protocol: report status updates (each fenced by its token) and free capacity, receive
    files to index with leases and fencing tokens. Stale updates come back with accepted=false.

    **Authorization**: an API key with the `worker` scope (or `admin`).

    Args:
        body (IndexingPollRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexingPollResponse | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: IndexingPollRequest,
) -> Response[IndexingPollResponse | Problem]:
    """Poll Indexing Jobs

     The worker protocol: report status updates (each fenced by its token) and free capacity, receive
    files to index with leases and fencing tokens. Stale updates come back with accepted=false.

    **Authorization**: an API key with the `worker` scope (or `admin`).

    Args:
        body (IndexingPollRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexingPollResponse | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: IndexingPollRequest,
) -> IndexingPollResponse | Problem | None:
    """Poll Indexing Jobs

     The worker protocol: report status updates (each fenced by its token) and free capacity, receive
    files to index with leases and fencing tokens. Stale updates come back with accepted=false.

    **Authorization**: an API key with the `worker` scope (or `admin`).

    Args:
        body (IndexingPollRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexingPollResponse | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
