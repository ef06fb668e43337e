from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.maintenance_pass import MaintenancePass
from ...models.problem import Problem
from ...models.skip_page import SkipPage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    pass_: list[MaintenancePass] | None | Unset = UNSET,
    index_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_pass_: list[str] | None | Unset
    if isinstance(pass_, Unset):
        json_pass_ = UNSET
    elif isinstance(pass_, list):
        json_pass_ = []
        for pass_type_0_item_data in pass_:
            pass_type_0_item = pass_type_0_item_data.value
            json_pass_.append(pass_type_0_item)

    else:
        json_pass_ = pass_
    params["pass"] = json_pass_

    json_index_id: None | str | Unset
    if isinstance(index_id, Unset):
        json_index_id = UNSET
    else:
        json_index_id = index_id
    params["index_id"] = json_index_id

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
        "url": "/v1/compaction/maintenance/skips",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SkipPage | None:
    if response.status_code == 200:
        response_200 = SkipPage.from_dict(response.json())

        return response_200

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
) -> Response[Problem | SkipPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    pass_: list[MaintenancePass] | None | Unset = UNSET,
    index_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | SkipPage]:
    """List Maintenance Skips

     Entries planner-api's maintenance passes (gc, retention, compaction-planning) currently skip, oldest
    record first: a file outside the storage root or that cannot be deleted, an artifact that cannot be
    read, an index whose planning raises. One record per entry, with its reason and how many passes met
    it; cleared once a pass handles the entry or no longer meets it.

    **Authorization**: an API key with the `admin` scope.

    Args:
        pass_ (list[MaintenancePass] | None | Unset): one of gc, retention, compaction-planning
        index_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset): `next_cursor` of the previous page

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SkipPage]
    """

    kwargs = _get_kwargs(
        pass_=pass_,
        index_id=index_id,
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
    pass_: list[MaintenancePass] | None | Unset = UNSET,
    index_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Problem | SkipPage | None:
    """List Maintenance Skips

     Entries planner-api's maintenance passes (gc, retention, compaction-planning) currently skip, oldest
    record first: a file outside the storage root or that cannot be deleted, an artifact that cannot be
    read, an index whose planning raises. One record per entry, with its reason and how many passes met
    it; cleared once a pass handles the entry or no longer meets it.

    **Authorization**: an API key with the `admin` scope.

    Args:
        pass_ (list[MaintenancePass] | None | Unset): one of gc, retention, compaction-planning
        index_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset): `next_cursor` of the previous page

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SkipPage
    """

    return sync_detailed(
        client=client,
        pass_=pass_,
        index_id=index_id,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    pass_: list[MaintenancePass] | None | Unset = UNSET,
    index_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Response[Problem | SkipPage]:
    """List Maintenance Skips

     Entries planner-api's maintenance passes (gc, retention, compaction-planning) currently skip, oldest
    record first: a file outside the storage root or that cannot be deleted, an artifact that cannot be
    read, an index whose planning raises. One record per entry, with its reason and how many passes met
    it; cleared once a pass handles the entry or no longer meets it.

    **Authorization**: an API key with the `admin` scope.

    Args:
        pass_ (list[MaintenancePass] | None | Unset): one of gc, retention, compaction-planning
        index_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset): `next_cursor` of the previous page

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SkipPage]
    """

    kwargs = _get_kwargs(
        pass_=pass_,
        index_id=index_id,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    pass_: list[MaintenancePass] | None | Unset = UNSET,
    index_id: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,
) -> Problem | SkipPage | None:
    """List Maintenance Skips

     Entries planner-api's maintenance passes (gc, retention, compaction-planning) currently skip, oldest
    record first: a file outside the storage root or that cannot be deleted, an artifact that cannot be
    read, an index whose planning raises. One record per entry, with its reason and how many passes met
    it; cleared once a pass handles the entry or no longer meets it.

    **Authorization**: an API key with the `admin` scope.

    Args:
        pass_ (list[MaintenancePass] | None | Unset): one of gc, retention, compaction-planning
        index_id (None | str | Unset):
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset): `next_cursor` of the previous page

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SkipPage
    """

    return (
        await asyncio_detailed(
            client=client,
            pass_=pass_,
            index_id=index_id,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
