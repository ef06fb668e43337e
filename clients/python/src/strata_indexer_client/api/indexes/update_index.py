from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.index_out import IndexOut
from ...models.index_settings import IndexSettings
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    index_id: str,
    *,
    body: IndexSettings,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/indexes/{index_id}".format(
            index_id=quote(str(index_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> IndexOut | Problem | None:
    if response.status_code == 200:
        response_200 = IndexOut.from_dict(response.json())

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
) -> Response[IndexOut | Problem]:
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
    body: IndexSettings,
) -> Response[IndexOut | Problem]:
    """Update Index

     Replace an index's settings. Splits already written keep their scope; new ones follow the new
    settings.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (IndexSettings): Everything about an index except its id: what PUT replaces.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexOut | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: IndexSettings,
) -> IndexOut | Problem | None:
    """Update Index

     Replace an index's settings. Splits already written keep their scope; new ones follow the new
    settings.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (IndexSettings): Everything about an index except its id: what PUT replaces.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexOut | Problem
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: IndexSettings,
) -> Response[IndexOut | Problem]:
    """Update Index

     Replace an index's settings. Splits already written keep their scope; new ones follow the new
    settings.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (IndexSettings): Everything about an index except its id: what PUT replaces.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexOut | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: IndexSettings,
) -> IndexOut | Problem | None:
    """Update Index

     Replace an index's settings. Splits already written keep their scope; new ones follow the new
    settings.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (IndexSettings): Everything about an index except its id: what PUT replaces.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexOut | Problem
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            body=body,
        )
    ).parsed
