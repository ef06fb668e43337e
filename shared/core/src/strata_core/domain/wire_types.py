"""Types of the values that cross the HTTP API on their way to PostgreSQL, as annotated types: integers within
the width of the column they land in, identifiers by their pattern, durations and instants within what time
arithmetic can hold. Used on request bodies and on path and query parameters alike, so the OpenAPI document states
each bound and validation enforces it (a 422 naming the field) before anything reaches the database."""

from __future__ import annotations

from typing import Annotated

from annotated_types import Ge, Le
from pydantic import StringConstraints

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT64_MAX = 2**64 - 1

# PostgreSQL bigint and integer.
Int64 = Annotated[int, Ge(INT64_MIN), Le(INT64_MAX)]
NonNegativeInt64 = Annotated[int, Ge(0), Le(INT64_MAX)]
PositiveInt32 = Annotated[int, Ge(1), Le(INT32_MAX)]
# A statistic of a column typed i64 or u64 (numeric(20, 0)): either range.
Int64OrUint64 = Annotated[int, Ge(INT64_MIN), Le(UINT64_MAX)]

# A duration that is added to or subtracted from instants (late-data window, maturation, lookback): a century
# keeps every sum within bigint and datetime.
MAX_DURATION_SECS = 100 * 365 * 86_400
DurationSecs = Annotated[int, Ge(0), Le(MAX_DURATION_SECS)]
# Epoch seconds up to the end of year 9999, the last instant a datetime can hold.
MAX_EPOCH_SECS = 253_402_300_799
EpochSecs = Annotated[int, Ge(0), Le(MAX_EPOCH_SECS)]

INDEX_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
# Crockford base32, as python-ulid writes it: split, job, plan, query and artifact ids.
ULID_PATTERN = r"^[0-9A-HJKMNP-TV-Z]{26}$"
# Partitions (tenants) and sources.
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"

IndexId = Annotated[str, StringConstraints(pattern=INDEX_ID_PATTERN)]
Ulid = Annotated[str, StringConstraints(pattern=ULID_PATTERN)]
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
