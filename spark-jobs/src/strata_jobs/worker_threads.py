"""Thread pools of one merge, or none: a small merge runs every step on the calling thread.

The merge pipelines its steps on a few threads (read the next input while hashing this one, encode an output
while verifying it), which pays off on inputs of millions of rows. On a merge of a few thousand rows, starting and
handing work to those threads cost more than the work itself (about a third of a 2,000-row merge's 34 ms, in
cProfile), and small merges are what a stream of small writes makes most of.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

# At or below this many input rows, a merge runs on its calling thread only.
INLINE_MAX_ROWS = 100_000


class InlineExecutor(Executor):
    """Runs each submitted call at once on the caller's thread; its future is already done."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the future, as a thread pool would
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def worker_threads(max_workers: int, name: str, *, inline: bool) -> Executor:
    return InlineExecutor() if inline else ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
