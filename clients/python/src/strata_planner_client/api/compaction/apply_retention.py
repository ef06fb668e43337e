from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.retention_apply_request import RetentionApplyRequest
from ...models.retention_report import RetentionReport
from ...types import Response


def _get_kwargs(
    index_id: str,
    *,
    body: RetentionApplyRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/indexes/{index_id}/retention/apply".format(
            index_id=quote(str(index_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RetentionReport | None:
    if response.status_code == 200:
        response_200 = RetentionReport.from_dict(response.json())

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
) -> Response[Problem | RetentionReport]:
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
    body: RetentionApplyRequest,
) -> Response[Problem | RetentionReport]:
    """Apply Retention

     Apply the index's retention now: every window whose end is older than its retention period is
    dropped
    (its live compaction jobs cancelled, its splits marked for deletion, one transaction per window; the
    files
    go after the garbage collector's grace period). A dry run lists what would go. 409 when the index
    has no
    retention configured.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (RetentionApplyRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionReport]
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
    body: RetentionApplyRequest,
) -> Problem | RetentionReport | None:
    """Apply Retention

     Apply the index's retention now: every window whose end is older than its retention period is
    dropped
    (its live compaction jobs cancelled, its splits marked for deletion, one transaction per window; the
    files
    go after the garbage collector's grace period). A dry run lists what would go. 409 when the index
    has no
    retention configured.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (RetentionApplyRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionReport
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
    body: RetentionApplyRequest,
) -> Response[Problem | RetentionReport]:
    """Apply Retention

     Apply the index's retention now: every window whose end is older than its retention period is
    dropped
    (its live compaction jobs cancelled, its splits marked for deletion, one transaction per window; the
    files
    go after the garbage collector's grace period). A dry run lists what would go. 409 when the index
    has no
    retention configured.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (RetentionApplyRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionReport]
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
    body: RetentionApplyRequest,
) -> Problem | RetentionReport | None:
    """Apply Retention

     Apply the index's retention now: every window whose end is older than its retention period is
    dropped
    (its live compaction jobs cancelled, its splits marked for deletion, one transaction per window; the
    files
    go after the garbage collector's grace period). A dry run lists what would go. 409 when the index
    has no
    retention configured.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        body (RetentionApplyRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionReport
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            body=body,
        )
    ).parsed
