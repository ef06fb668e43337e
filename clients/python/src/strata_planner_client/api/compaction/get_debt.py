from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.debt_out import DebtOut
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    index_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/indexes/{index_id}/debt".format(
            index_id=quote(str(index_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DebtOut | Problem | None:
    if response.status_code == 200:
        response_200 = DebtOut.from_dict(response.json())

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
) -> Response[DebtOut | Problem]:
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
) -> Response[DebtOut | Problem]:
    """Get Debt

     How far compaction and indexing are behind the index's writes: splits the merge policy would still
    merge
    (by level), closed windows not yet final, live jobs, the merge rate and first-merge delays, files
    waiting for
    their artifacts.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DebtOut | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
) -> DebtOut | Problem | None:
    """Get Debt

     How far compaction and indexing are behind the index's writes: splits the merge policy would still
    merge
    (by level), closed windows not yet final, live jobs, the merge rate and first-merge delays, files
    waiting for
    their artifacts.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DebtOut | Problem
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[DebtOut | Problem]:
    """Get Debt

     How far compaction and indexing are behind the index's writes: splits the merge policy would still
    merge
    (by level), closed windows not yet final, live jobs, the merge rate and first-merge delays, files
    waiting for
    their artifacts.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DebtOut | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
) -> DebtOut | Problem | None:
    """Get Debt

     How far compaction and indexing are behind the index's writes: splits the merge policy would still
    merge
    (by level), closed windows not yet final, live jobs, the merge rate and first-merge delays, files
    waiting for
    their artifacts.

    **Authorization**: an API key with the `worker` or `writer` or `query` scope (or `admin`).

    Args:
        index_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DebtOut | Problem
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
        )
    ).parsed
