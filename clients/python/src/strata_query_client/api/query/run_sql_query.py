from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.query_request import QueryRequest
from ...models.query_result import QueryResult
from ...types import Response


def _get_kwargs(
    *,
    body: QueryRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/query",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | QueryResult | None:
    if response.status_code == 200:
        response_200 = QueryResult.from_dict(response.json())

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

    if response.status_code == 406:
        response_406 = Problem.from_dict(response.json())

        return response_406

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 502:
        response_502 = Problem.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if response.status_code == 504:
        response_504 = Problem.from_dict(response.json())

        return response_504

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | QueryResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: QueryRequest,
) -> Response[Problem | QueryResult]:
    """Run Sql Query

     Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top:
    in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the
    engine
    the request names. The result streams as the engine produces it. A repeated query whose published
    files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run
    it, keep
    the new result) or `no-store` (run it, keep nothing).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        body (QueryRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueryResult]
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
    body: QueryRequest,
) -> Problem | QueryResult | None:
    """Run Sql Query

     Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top:
    in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the
    engine
    the request names. The result streams as the engine produces it. A repeated query whose published
    files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run
    it, keep
    the new result) or `no-store` (run it, keep nothing).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        body (QueryRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueryResult
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: QueryRequest,
) -> Response[Problem | QueryResult]:
    """Run Sql Query

     Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top:
    in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the
    engine
    the request names. The result streams as the engine produces it. A repeated query whose published
    files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run
    it, keep
    the new result) or `no-store` (run it, keep nothing).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        body (QueryRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | QueryResult]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: QueryRequest,
) -> Problem | QueryResult | None:
    """Run Sql Query

     Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top:
    in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the
    engine
    the request names. The result streams as the engine produces it. A repeated query whose published
    files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run
    it, keep
    the new result) or `no-store` (run it, keep nothing).

    **Authorization**: an API key with the `query` or `admin` scope.

    Args:
        body (QueryRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | QueryResult
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
