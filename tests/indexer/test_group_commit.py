"""The group committer alone (no database): an idle scope commits at once, requests arriving during a commit form
the next group within its bounds, a failed commit fails exactly its group, scopes never wait on each other, and
turned off every request commits alone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from strata_indexer.ingest.group_commit import GroupCommitter


async def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.001)


class HeldCommits:
    """A commit function that records each group and holds the first commit of every scope until released."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.release = asyncio.Event()
        self.fail_on = fail_on

    async def __call__(self, items: list[str]) -> tuple[str, ...]:
        self.calls.append(list(items))
        if len(self.calls) == 1:
            await self.release.wait()
        if self.fail_on in items:
            raise OSError(f"storage went away under {items}")
        return tuple(items)


def _committer(max_rows: int = 1_000, max_bytes: int = 1_000, enabled: bool = True,
               sizes: list[int] | None = None) -> GroupCommitter:
    return GroupCommitter(enabled=enabled, max_rows=max_rows, max_bytes=max_bytes,
                          on_commit=None if sizes is None else sizes.append)


async def test_an_idle_scope_commits_the_first_request_at_once_and_alone():
    committer = _committer()
    commits = HeldCommits()
    commits.release.set()
    assert await committer.submit("s", "a", rows=1, nbytes=1, commit=commits) == ("a",)
    assert commits.calls == [["a"]]
    assert committer.waiting() == 0


async def test_requests_arriving_during_a_commit_are_committed_together_next():
    sizes: list[int] = []
    committer = _committer(sizes=sizes)
    commits = HeldCommits()
    first = asyncio.create_task(committer.submit("s", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    followers = [asyncio.create_task(committer.submit("s", x, rows=1, nbytes=1, commit=commits)) for x in "bcd"]
    await _until(lambda: committer.waiting() == 3)
    commits.release.set()
    assert await asyncio.gather(first, *followers) == [("a",)] + [("b", "c", "d")] * 3
    assert commits.calls == [["a"], ["b", "c", "d"]]
    assert sizes == [1, 3]


async def test_another_scope_is_never_held_behind_a_commit_in_flight():
    committer = _committer()
    commits = HeldCommits()
    held = asyncio.create_task(committer.submit("acme", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    assert await committer.submit("globex", "g", rows=1, nbytes=1, commit=commits) == ("g",)
    assert not held.done()
    commits.release.set()
    assert await held == ("a",)


@pytest.mark.parametrize("bound", ["rows", "bytes"])
async def test_a_group_stops_growing_at_its_bound_and_a_larger_request_is_its_own_group(bound):
    committer = _committer(max_rows=10) if bound == "rows" else _committer(max_bytes=10)
    commits = HeldCommits()
    first = asyncio.create_task(committer.submit("s", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    sizes = {"b": 4, "c": 6, "d": 1, "e": 25, "f": 2}
    followers = [asyncio.create_task(committer.submit("s", name, rows=size if bound == "rows" else 1,
                                                      nbytes=size if bound == "bytes" else 1, commit=commits))
                 for name, size in sizes.items()]
    await _until(lambda: committer.waiting() == len(sizes))
    commits.release.set()
    await asyncio.gather(first, *followers)
    assert commits.calls == [["a"], ["b", "c"], ["d"], ["e"], ["f"]]


async def test_a_failed_commit_fails_every_request_of_its_group_and_no_other():
    committer = _committer(max_rows=2)
    commits = HeldCommits(fail_on="c")
    first = asyncio.create_task(committer.submit("s", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    followers = [asyncio.create_task(committer.submit("s", x, rows=1, nbytes=1, commit=commits)) for x in "bcde"]
    await _until(lambda: committer.waiting() == 4)
    commits.release.set()
    outcomes = await asyncio.gather(first, *followers, return_exceptions=True)
    assert outcomes[0] == ("a",)
    assert isinstance(outcomes[1], OSError) and outcomes[1] is outcomes[2]
    assert outcomes[3:] == [("d", "e")] * 2
    assert commits.calls == [["a"], ["b", "c"], ["d", "e"]]


async def test_a_request_that_goes_away_does_not_cancel_its_group():
    committer = _committer()
    commits = HeldCommits()
    first = asyncio.create_task(committer.submit("s", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    gone = asyncio.create_task(committer.submit("s", "b", rows=1, nbytes=1, commit=commits))
    stays = asyncio.create_task(committer.submit("s", "c", rows=1, nbytes=1, commit=commits))
    await _until(lambda: committer.waiting() == 2)
    first.cancel()
    gone.cancel()
    commits.release.set()
    assert await stays == ("b", "c")
    assert commits.calls == [["a"], ["b", "c"]]


async def test_turned_off_every_request_commits_alone_and_at_once():
    sizes: list[int] = []
    committer = _committer(enabled=False, sizes=sizes)
    commits = HeldCommits()
    first = asyncio.create_task(committer.submit("s", "a", rows=1, nbytes=1, commit=commits))
    await _until(lambda: commits.calls)
    second = asyncio.create_task(committer.submit("s", "b", rows=1, nbytes=1, commit=commits))
    await _until(lambda: len(commits.calls) == 2)
    commits.release.set()
    assert await asyncio.gather(first, second) == [("a",), ("b",)]
    assert commits.calls == [["a"], ["b"]]
    assert sizes == [1, 1]


async def test_alone_commits_at_an_idle_scope_only_and_the_next_requests_queue_behind_it():
    sizes: list[int] = []
    committer = _committer(sizes=sizes)
    commits = HeldCommits()

    async def commit_alone() -> tuple[str, ...]:
        committer.observe(1)
        return await commits(["a"])

    first = committer.alone("s", commit_alone)
    assert first is not None
    first_task = asyncio.ensure_future(first)
    await _until(lambda: commits.calls)
    # A commit of the scope is in flight: nothing runs alone, the requests are submitted and grouped as usual.
    assert committer.alone("s", commit_alone) is None
    followers = [asyncio.create_task(committer.submit("s", x, rows=1, nbytes=1, commit=commits)) for x in "bc"]
    await _until(lambda: committer.waiting() == 2)
    commits.release.set()
    assert await first_task == ("a",)
    assert await asyncio.gather(*followers) == [("b", "c")] * 2
    assert commits.calls == [["a"], ["b", "c"]]
    assert sizes == [1, 2]
    # Idle again: the next request runs alone.
    again = committer.alone("s", commit_alone)
    assert again is not None and await again == ("a",)


async def test_a_failed_alone_commit_fails_only_its_request():
    committer = _committer()
    commits = HeldCommits()
    refused = asyncio.Event()

    async def bad_body() -> tuple[str, ...]:
        await refused.wait()
        raise ValueError("line 2 does not decode")

    alone = committer.alone("s", bad_body)
    assert alone is not None
    failing = asyncio.ensure_future(alone)
    follower = asyncio.create_task(committer.submit("s", "b", rows=1, nbytes=1, commit=commits))
    await _until(lambda: committer.waiting() == 1)
    commits.release.set()
    refused.set()
    with pytest.raises(ValueError, match="line 2"):
        await failing
    assert await follower == ("b",)


async def test_turned_off_alone_always_commits_at_once():
    committer = _committer(enabled=False)
    commits = HeldCommits()
    first = committer.alone("s", lambda: commits(["a"]))
    second = committer.alone("s", lambda: commits(["b"]))
    assert first is not None and second is not None
    first_task, second_task = asyncio.ensure_future(first), asyncio.ensure_future(second)
    await _until(lambda: len(commits.calls) == 2)
    commits.release.set()
    assert await asyncio.gather(first_task, second_task) == [("a",), ("b",)]
