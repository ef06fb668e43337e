import datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.retention_report import RetentionReport
from ...types import UNSET, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    older_than: datetime.datetime | int,
    dry_run: bool | Unset = False,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_older_than: int | str
    if isinstance(older_than, datetime.datetime):
        json_older_than = older_than.isoformat()
    else:
        json_older_than = older_than
    params["older_than"] = json_older_than

    params["dry_run"] = dry_run

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/indexes/{index_id}/windows".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RetentionReport | None:
    if response.status_code == 200:
        response_200 = RetentionReport.from_dict(response.json())

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
    older_than: datetime.datetime | int,
    dry_run: bool | Unset = False,
) -> Response[Problem | RetentionReport]:
    """Delete Windows

     Drop the index's windows ending at or before `older_than`, as retention does (whatever its
    configured
    period): live compaction jobs cancelled, splits marked for deletion, files deleted after the grace
    period.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        older_than (datetime.datetime | int): drop windows ending at or before this (epoch seconds
            or RFC 3339); not in the future
        dry_run (bool | Unset): only list what would be dropped Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionReport]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        older_than=older_than,
        dry_run=dry_run,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    older_than: datetime.datetime | int,
    dry_run: bool | Unset = False,
) -> Problem | RetentionReport | None:
    """Delete Windows

     Drop the index's windows ending at or before `older_than`, as retention does (whatever its
    configured
    period): live compaction jobs cancelled, splits marked for deletion, files deleted after the grace
    period.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        older_than (datetime.datetime | int): drop windows ending at or before this (epoch seconds
            or RFC 3339); not in the future
        dry_run (bool | Unset): only list what would be dropped Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RetentionReport
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        older_than=older_than,
        dry_run=dry_run,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    older_than: datetime.datetime | int,
    dry_run: bool | Unset = False,
) -> Response[Problem | RetentionReport]:
    """Delete Windows

     Drop the index's windows ending at or before `older_than`, as retention does (whatever its
    configured
    period): live compaction jobs cancelled, splits marked for deletion, files deleted after the grace
    period.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        older_than (datetime.datetime | int): drop windows ending at or before this (epoch seconds
            or RFC 3339); not in the future
        dry_run (bool | Unset): only list what would be dropped Default: False.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RetentionReport]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        older_than=older_than,
        dry_run=dry_run,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    older_than: datetime.datetime | int,
    dry_run: bool | Unset = False,
) -> Problem | RetentionReport | None:
    """Delete Windows

     Drop the index's windows ending at or before `older_than`, as retention does (whatever its
    configured
    period): live compaction jobs cancelled, splits marked for deletion, files deleted after the grace
    period.

    **Authorization**: an API key with the `admin` scope.

    Args:
        index_id (str):
        older_than (datetime.datetime | int): drop windows ending at or before this (epoch seconds
            or RFC 3339); not in the future
        dry_run (bool | Unset): only list what would be dropped Default: False.

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
            older_than=older_than,
            dry_run=dry_run,
        )
    ).parsed
