from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.cancel_sql_query_response_cancel_sql_query import (
    CancelSqlQueryResponseCancelSqlQuery,
)
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    query_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/query/{query_id}".format(
            query_id=quote(str(query_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CancelSqlQueryResponseCancelSqlQuery | Problem | None:
    if response.status_code == 202:
        response_202 = CancelSqlQueryResponseCancelSqlQuery.from_dict(response.json())

        return response_202

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
) -> Response[CancelSqlQueryResponseCancelSqlQuery | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    query_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[CancelSqlQueryResponseCancelSqlQuery | Problem]:
    """Cancel Sql Query

     Interrupt a running query on its engine; the query's own request then answers 409 (or, when its
    result
    was already streaming, the stream ends early).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        query_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CancelSqlQueryResponseCancelSqlQuery | Problem]
    """

    kwargs = _get_kwargs(
        query_id=query_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    query_id: str,
    *,
    client: AuthenticatedClient,
) -> CancelSqlQueryResponseCancelSqlQuery | Problem | None:
    """Cancel Sql Query

     Interrupt a running query on its engine; the query's own request then answers 409 (or, when its
    result
    was already streaming, the stream ends early).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        query_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CancelSqlQueryResponseCancelSqlQuery | Problem
    """

    return sync_detailed(
        query_id=query_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    query_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[CancelSqlQueryResponseCancelSqlQuery | Problem]:
    """Cancel Sql Query

     Interrupt a running query on its engine; the query's own request then answers 409 (or, when its
    result
    was already streaming, the stream ends early).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        query_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CancelSqlQueryResponseCancelSqlQuery | Problem]
    """

    kwargs = _get_kwargs(
        query_id=query_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    query_id: str,
    *,
    client: AuthenticatedClient,
) -> CancelSqlQueryResponseCancelSqlQuery | Problem | None:
    """Cancel Sql Query

     Interrupt a running query on its engine; the query's own request then answers 409 (or, when its
    result
    was already streaming, the stream ends early).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        query_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CancelSqlQueryResponseCancelSqlQuery | Problem
    """

    return (
        await asyncio_detailed(
            query_id=query_id,
            client=client,
        )
    ).parsed
