from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ingest_response import IngestResponse
from ...models.problem import Problem
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    index_id: str,
    *,
    body: File,
    partition_id: None | str | Unset = UNSET,
    source_id: str | Unset = "ingest-api",
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    json_partition_id: None | str | Unset
    if isinstance(partition_id, Unset):
        json_partition_id = UNSET
    else:
        json_partition_id = partition_id
    params["partition_id"] = json_partition_id

    params["source_id"] = source_id

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/indexes/{index_id}/ingest".format(
            index_id=quote(str(index_id), safe=""),
        ),
        "params": params,
    }

    _kwargs["content"] = body.payload
    headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> IngestResponse | Problem | None:
    if response.status_code == 200:
        response_200 = IngestResponse.from_dict(response.json())

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

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

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
) -> Response[IngestResponse | Problem]:
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
    body: File,
    partition_id: None | str | Unset = UNSET,
    source_id: str | Unset = "ingest-api",
) -> Response[IngestResponse | Problem]:
    """Ingest

     Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`):
    one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. Requests of the same index, partition and source that arrive while one of
    them is
    being written are written together (group commit): the answer comes once the group's splits are
    published,
    and a split may then hold rows of several requests. The partition defaults to the key's tenant, else
    `default`. A body that does not decode is a 400 naming the NDJSON line or the Arrow column, refused
    alone; a
    media type not listed here is a 415; a failed write (storage, PostgreSQL) fails every request of its
    group
    with the same 503, and nothing of the group is published.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        index_id (str):
        partition_id (None | str | Unset):
        source_id (str | Unset):  Default: 'ingest-api'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IngestResponse | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        body=body,
        partition_id=partition_id,
        source_id=source_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: File,
    partition_id: None | str | Unset = UNSET,
    source_id: str | Unset = "ingest-api",
) -> IngestResponse | Problem | None:
    """Ingest

     Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`):
    one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. Requests of the same index, partition and source that arrive while one of
    them is
    being written are written together (group commit): the answer comes once the group's splits are
    published,
    and a split may then hold rows of several requests. The partition defaults to the key's tenant, else
    `default`. A body that does not decode is a 400 naming the NDJSON line or the Arrow column, refused
    alone; a
    media type not listed here is a 415; a failed write (storage, PostgreSQL) fails every request of its
    group
    with the same 503, and nothing of the group is published.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        index_id (str):
        partition_id (None | str | Unset):
        source_id (str | Unset):  Default: 'ingest-api'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IngestResponse | Problem
    """

    return sync_detailed(
        index_id=index_id,
        client=client,
        body=body,
        partition_id=partition_id,
        source_id=source_id,
    ).parsed


async def asyncio_detailed(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: File,
    partition_id: None | str | Unset = UNSET,
    source_id: str | Unset = "ingest-api",
) -> Response[IngestResponse | Problem]:
    """Ingest

     Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`):
    one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. Requests of the same index, partition and source that arrive while one of
    them is
    being written are written together (group commit): the answer comes once the group's splits are
    published,
    and a split may then hold rows of several requests. The partition defaults to the key's tenant, else
    `default`. A body that does not decode is a 400 naming the NDJSON line or the Arrow column, refused
    alone; a
    media type not listed here is a 415; a failed write (storage, PostgreSQL) fails every request of its
    group
    with the same 503, and nothing of the group is published.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        index_id (str):
        partition_id (None | str | Unset):
        source_id (str | Unset):  Default: 'ingest-api'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IngestResponse | Problem]
    """

    kwargs = _get_kwargs(
        index_id=index_id,
        body=body,
        partition_id=partition_id,
        source_id=source_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    index_id: str,
    *,
    client: AuthenticatedClient,
    body: File,
    partition_id: None | str | Unset = UNSET,
    source_id: str | Unset = "ingest-api",
) -> IngestResponse | Problem | None:
    """Ingest

     Ingest rows, sent as an Arrow IPC stream (`application/vnd.apache.arrow.stream`, or
    `application/octet-stream` as generated clients send bytes) or as NDJSON (`application/x-ndjson`):
    one
    sorted split per time window (TW-1), rows older than the late-data window dropped and counted, null
    timestamps in window 0. Requests of the same index, partition and source that arrive while one of
    them is
    being written are written together (group commit): the answer comes once the group's splits are
    published,
    and a split may then hold rows of several requests. The partition defaults to the key's tenant, else
    `default`. A body that does not decode is a 400 naming the NDJSON line or the Arrow column, refused
    alone; a
    media type not listed here is a 415; a failed write (storage, PostgreSQL) fails every request of its
    group
    with the same 503, and nothing of the group is published.

    **Authorization**: an API key with the `writer` scope (or `admin`).

    Args:
        index_id (str):
        partition_id (None | str | Unset):
        source_id (str | Unset):  Default: 'ingest-api'.
        body (File):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IngestResponse | Problem
    """

    return (
        await asyncio_detailed(
            index_id=index_id,
            client=client,
            body=body,
            partition_id=partition_id,
            source_id=source_id,
        )
    ).parsed
