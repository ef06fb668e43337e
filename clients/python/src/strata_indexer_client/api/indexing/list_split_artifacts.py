from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.split_artifacts import SplitArtifacts
from ...types import Response


def _get_kwargs(
    split_id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/splits/{split_id}/artifacts".format(
            split_id=quote(str(split_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SplitArtifacts | None:
    if response.status_code == 200:
        response_200 = SplitArtifacts.from_dict(response.json())

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
) -> Response[Problem | SplitArtifacts]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    split_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | SplitArtifacts]:
    """List Split Artifacts

     A file's registered artifacts and its snapshot: which of them queries use (the published set).

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        split_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SplitArtifacts]
    """

    kwargs = _get_kwargs(
        split_id=split_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    split_id: str,
    *,
    client: AuthenticatedClient,
) -> Problem | SplitArtifacts | None:
    """List Split Artifacts

     A file's registered artifacts and its snapshot: which of them queries use (the published set).

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        split_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SplitArtifacts
    """

    return sync_detailed(
        split_id=split_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    split_id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | SplitArtifacts]:
    """List Split Artifacts

     A file's registered artifacts and its snapshot: which of them queries use (the published set).

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        split_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SplitArtifacts]
    """

    kwargs = _get_kwargs(
        split_id=split_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    split_id: str,
    *,
    client: AuthenticatedClient,
) -> Problem | SplitArtifacts | None:
    """List Split Artifacts

     A file's registered artifacts and its snapshot: which of them queries use (the published set).

    **Authorization**: an API key with the `writer` or `worker` or `query` scope (or `admin`).

    Args:
        split_id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SplitArtifacts
    """

    return (
        await asyncio_detailed(
            split_id=split_id,
            client=client,
        )
    ).parsed
