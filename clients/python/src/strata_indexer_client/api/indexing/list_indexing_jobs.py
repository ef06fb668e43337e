from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.indexing_job_page import IndexingJobPage
from ...models.job_status import JobStatus
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    index_id: None | str | Unset = UNSET,
    status: list[JobStatus] | None | Unset = UNSET,
    split_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_index_id: None | str | Unset
    if isinstance(index_id, Unset):
        json_index_id = UNSET
    else:
        json_index_id = index_id
    params["index_id"] = json_index_id

    json_status: list[str] | None | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    elif isinstance(status, list):
        json_status = []
        for status_type_0_item_data in status:
            status_type_0_item = status_type_0_item_data.value
            json_status.append(status_type_0_item)

    else:
        json_status = status
    params["status"] = json_status

    json_split_id: None | str | Unset
    if isinstance(split_id, Unset):
        json_split_id = UNSET
    else:
        json_split_id = split_id
    params["split_id"] = json_split_id

    params["limit"] = limit

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/indexing/jobs",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> IndexingJobPage | Problem | None:
    if response.status_code == 200:
        response_200 = IndexingJobPage.from_dict(response.json())

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
) -> Response[IndexingJobPage | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    index_id: None | str | Unset = UNSET,
    status: list[JobStatus] | None | Unset = UNSET,
    split_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[IndexingJobPage | Problem]:
    """List Indexing Jobs

     Indexing jobs in creation order, filtered by index, status and file.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Args:
        index_id (None | str | Unset):
        status (list[JobStatus] | None | Unset):
        split_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexingJobPage | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        status=status,
        split_id=split_id,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    index_id: None | str | Unset = UNSET,
    status: list[JobStatus] | None | Unset = UNSET,
    split_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> IndexingJobPage | Problem | None:
    """List Indexing Jobs

     Indexing jobs in creation order, filtered by index, status and file.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Args:
        index_id (None | str | Unset):
        status (list[JobStatus] | None | Unset):
        split_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexingJobPage | Problem
    """

    return sync_detailed(
        client=client,
        index_id=index_id,
        status=status,
        split_id=split_id,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    index_id: None | str | Unset = UNSET,
    status: list[JobStatus] | None | Unset = UNSET,
    split_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[IndexingJobPage | Problem]:
    """List Indexing Jobs

     Indexing jobs in creation order, filtered by index, status and file.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Args:
        index_id (None | str | Unset):
        status (list[JobStatus] | None | Unset):
        split_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexingJobPage | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        status=status,
        split_id=split_id,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    index_id: None | str | Unset = UNSET,
    status: list[JobStatus] | None | Unset = UNSET,
    split_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> IndexingJobPage | Problem | None:
    """List Indexing Jobs

     Indexing jobs in creation order, filtered by index, status and file.

    **Authorization**: an API key with the `worker` or `writer` scope (or `admin`).

    Args:
        index_id (None | str | Unset):
        status (list[JobStatus] | None | Unset):
        split_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexingJobPage | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            index_id=index_id,
            status=status,
            split_id=split_id,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
