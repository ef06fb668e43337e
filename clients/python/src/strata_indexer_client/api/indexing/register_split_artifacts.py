from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.register_artifacts_request import RegisterArtifactsRequest
from ...models.register_artifacts_response import RegisterArtifactsResponse
from ...types import Response


def _get_kwargs(
    split_id: str,
    *,
    body: RegisterArtifactsRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/splits/{split_id}/artifacts".format(
            split_id=quote(str(split_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RegisterArtifactsResponse | None:
    if response.status_code == 200:
        response_200 = RegisterArtifactsResponse.from_dict(response.json())

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

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
) -> Response[Problem | RegisterArtifactsResponse]:
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
    body: RegisterArtifactsRequest,
) -> Response[Problem | RegisterArtifactsResponse]:
    """Register Split Artifacts

     Register artifacts built elsewhere. Each is checked (where it is stored, its size, its header: file,
    type, column, format version, and its content hash); all or nothing. Registering the same artifact
    again is
    a no-op; the same identity (file, type, column, version) with other content is a 409. With
    `publish`, the
    file's snapshot then lists every registered artifact, all visible at once.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        split_id (str):
        body (RegisterArtifactsRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RegisterArtifactsResponse]
    """

    kwargs = _get_kwargs(
        split_id=split_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    split_id: str,
    *,
    client: AuthenticatedClient,
    body: RegisterArtifactsRequest,
) -> Problem | RegisterArtifactsResponse | None:
    """Register Split Artifacts

     Register artifacts built elsewhere. Each is checked (where it is stored, its size, its header: file,
    type, column, format version, and its content hash); all or nothing. Registering the same artifact
    again is
    a no-op; the same identity (file, type, column, version) with other content is a 409. With
    `publish`, the
    file's snapshot then lists every registered artifact, all visible at once.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        split_id (str):
        body (RegisterArtifactsRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RegisterArtifactsResponse
    """

    return sync_detailed(
        split_id=split_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    split_id: str,
    *,
    client: AuthenticatedClient,
    body: RegisterArtifactsRequest,
) -> Response[Problem | RegisterArtifactsResponse]:
    """Register Split Artifacts

     Register artifacts built elsewhere. Each is checked (where it is stored, its size, its header: file,
    type, column, format version, and its content hash); all or nothing. Registering the same artifact
    again is
    a no-op; the same identity (file, type, column, version) with other content is a 409. With
    `publish`, the
    file's snapshot then lists every registered artifact, all visible at once.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        split_id (str):
        body (RegisterArtifactsRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RegisterArtifactsResponse]
    """

    kwargs = _get_kwargs(
        split_id=split_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    split_id: str,
    *,
    client: AuthenticatedClient,
    body: RegisterArtifactsRequest,
) -> Problem | RegisterArtifactsResponse | None:
    """Register Split Artifacts

     Register artifacts built elsewhere. Each is checked (where it is stored, its size, its header: file,
    type, column, format version, and its content hash); all or nothing. Registering the same artifact
    again is
    a no-op; the same identity (file, type, column, version) with other content is a 409. With
    `publish`, the
    file's snapshot then lists every registered artifact, all visible at once.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        split_id (str):
        body (RegisterArtifactsRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RegisterArtifactsResponse
    """

    return (
        await asyncio_detailed(
            split_id=split_id,
            client=client,
            body=body,
        )
    ).parsed
