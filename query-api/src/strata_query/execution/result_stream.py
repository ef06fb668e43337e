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
        # True once every batch has been served (the engine's end reached, not a cut, not given up on).
        self.finished = False
        self._closed = False
        self._served: list[pa.RecordBatch] | None = None
        self._served_room = 0

    def record_up_to(self, max_bytes: int) -> None:
        """Record the batches served, while they total at most `max_bytes`, for `served` to return."""
        self._served, self._served_room = [], max_bytes

    def served(self) -> list[pa.RecordBatch] | None:
        """Every batch of a finished, uncut result, if recorded within the bound; else None."""
        return self._served if self.finished and not self.truncated else None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        try:
            for batch in self._batches:
                if self.row_cap is not None and self.rows + batch.num_rows > self.row_cap:
                    self.truncated = True
                    batch = batch.slice(0, self.row_cap - self.rows)
                if batch.num_rows:
                    self.rows += batch.num_rows
                    self._record(batch)
                    yield batch
                if self.truncated:
                    return
            self.finished = True
        finally:
            self.close()

    def _record(self, batch: pa.RecordBatch) -> None:
        if self._served is not None:
            self._served_room -= batch.nbytes
            if self._served_room < 0:
                self._served = None
            else:
                self._served.append(batch)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close()


def engine_limit(row_cap: int | None) -> int | None:
    """The LIMIT to give the engine for a cap: one row more, to tell a cut result from one that fits."""
    return None if row_cap is None else row_cap + 1
