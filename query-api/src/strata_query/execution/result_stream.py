"""A query's result as a stream of Arrow batches, whichever engine produced it, with the row cap applied.

The engine is asked for one row more than the cap (the SQL's LIMIT is lowered to cap + 1), so the stream knows
whether the cap cut the result: a cut is reported, never silent."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa


class ResultStream:
    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch], close: Callable[[], None],
                 row_cap: int | None, *, complete: bool = False) -> None:
        self.schema = schema
        # True when the engine has finished and every batch is in memory (a small result): serializing it
        # cannot block on the engine.
        self.complete = complete
        self._batches = batches
        self._close = close
        self.row_cap = row_cap
        self.rows = 0
        self.truncated = False
        self._closed = False

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        try:
            for batch in self._batches:
                if self.row_cap is not None and self.rows + batch.num_rows > self.row_cap:
                    self.truncated = True
                    batch = batch.slice(0, self.row_cap - self.rows)
                if batch.num_rows:
                    self.rows += batch.num_rows
                    yield batch
                if self.truncated:
                    return
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()


def engine_limit(row_cap: int | None) -> int | None:
    """The LIMIT to give the engine for a cap: one row more, to tell a cut result from one that fits."""
    return None if row_cap is None else row_cap + 1
