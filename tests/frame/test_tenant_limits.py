"""The per-tenant limits both doors apply (the proxy's HTTP, query-api's Flight SQL): the token bucket, the
concurrency cap and their order, on their own. Each door's use of them is tested through the door:
tests/services/test_proxy_limits.py and tests/query/test_flight_limits.py."""

from __future__ import annotations

import threading

import pytest

from strata_frame.web.auth import Principal
from strata_frame.web.tenant_limits import (
    ConcurrencyCap,
    Decision,
    Refusal,
    Slot,
    TenantLimits,
    TokenBuckets,
    limit_key,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_the_burst_then_refuses_with_the_exact_wait() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate_per_sec=4.0, burst=2, clock=clock)
    assert buckets.try_acquire("acme") == Decision(True, 0.0)
    assert buckets.try_acquire("acme") == Decision(True, 0.0)
    # Empty: one token is 1/4 s away.
    assert buckets.try_acquire("acme") == Decision(False, 0.25)
    clock.now += 0.125
    assert buckets.try_acquire("acme") == Decision(False, 0.125)
    clock.now += 0.125
    assert buckets.try_acquire("acme").allowed
    assert buckets.try_acquire("acme") == Decision(False, 0.25)


def test_bucket_refills_at_the_rate_up_to_the_burst_only() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate_per_sec=2.0, burst=3, clock=clock)
    for _ in range(3):
        assert buckets.try_acquire("acme").allowed
    clock.now += 1.0  # two tokens back
    assert [buckets.try_acquire("acme").allowed for _ in range(3)] == [True, True, False]
    clock.now += 3600.0  # a long quiet spell refills to the burst, no further
    assert [buckets.try_acquire("acme").allowed for _ in range(4)] == [True, True, True, False]


def test_bucket_takes_an_explicit_now_and_ignores_a_clock_going_back() -> None:
    buckets = TokenBuckets(rate_per_sec=0.5, burst=1, clock=lambda: pytest.fail("the clock is not read"))
    assert buckets.try_acquire("acme", now=10.0).allowed
    assert buckets.try_acquire("acme", now=10.0) == Decision(False, 2.0)
    assert buckets.try_acquire("acme", now=5.0) == Decision(False, 2.0)
    assert buckets.try_acquire("acme", now=12.0).allowed


def test_buckets_of_tenants_are_independent() -> None:
    clock = FakeClock()
    buckets = TokenBuckets(rate_per_sec=1.0, burst=1, clock=clock)
    assert buckets.try_acquire("acme").allowed
    assert not buckets.try_acquire("acme").allowed
    assert buckets.try_acquire("globex").allowed
    assert not buckets.try_acquire("globex").allowed


@pytest.mark.parametrize(("rate", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_bucket_refuses_a_limit_that_would_admit_nothing(rate: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBuckets(rate, burst)


def test_cap_counts_in_flight_per_tenant_and_release_is_idempotent() -> None:
    cap = ConcurrencyCap(2)
    first, second = cap.try_acquire("acme"), cap.try_acquire("acme")
    assert first is not None and second is not None
    assert cap.try_acquire("acme") is None
    assert cap.try_acquire("globex") is not None
    first.release()
    first.release()  # a second release must not free a slot that another request holds
    assert cap.in_flight("acme") == 1
    third = cap.try_acquire("acme")
    assert third is not None
    assert cap.try_acquire("acme") is None
    second.release()
    third.release()
    assert cap.in_flight("acme") == 0


def test_cap_of_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        ConcurrencyCap(0)


def test_untenanted_keys_are_limited_by_their_own_identity() -> None:
    assert limit_key("acme", "0123456789ab") == "acme"
    assert limit_key(None, "0123456789ab") == "key:0123456789ab"
    assert limit_key(None, "0123456789ab") != limit_key(None, "ba9876543210")


ACME = Principal("acme-key-id1", frozenset(), "acme")
ADMIN = Principal("admin-key-id", frozenset(), None)


def test_a_refusal_names_the_limit_and_when_to_retry() -> None:
    clock = FakeClock()
    limits = TenantLimits(rate_per_sec=0.5, burst=1, max_concurrent=1, clock=clock)
    slot = limits.admit(ACME)
    assert isinstance(slot, Slot)
    refused = limits.admit(ACME)
    assert isinstance(refused, Refusal) and (refused.reason, refused.key) == ("rate", "acme")
    assert refused.detail() == "tenant 'acme' is over its rate limit of 0.5 requests/s (burst 1); retry in 2 s"
    # A client already held 1.5 s by the proxy's pacer hears the rest of the wait.
    assert refused.retry_in(1.5) == 0.5 and "retry in 0.5 s" in refused.detail(1.5)
    clock.now += 2.0
    capped = limits.admit(ACME)
    assert isinstance(capped, Refusal) and capped.reason == "concurrency"
    assert capped.detail() == ("tenant 'acme' already has 1 requests running, its cap on concurrent requests; "
                               "retry once one of them ends")
    # When a running request ends is unknown: the nominal second stands, held or not.
    assert capped.retry_in(1.0) == 1.0


def test_a_cap_refusal_still_takes_a_token_and_a_continuation_takes_none() -> None:
    limits = TenantLimits(rate_per_sec=0.001, burst=2, max_concurrent=1, clock=FakeClock())
    held = limits.admit(ACME)
    assert isinstance(held, Slot)
    assert isinstance(limits.admit(ACME), Refusal)  # the cap's refusal spent the second token
    held.release()
    assert limits.admit(ACME).reason == "rate"
    continuation = limits.admit(ACME, takes_token=False)
    assert isinstance(continuation, Slot)
    assert limits.admit(ACME, takes_token=False).reason == "concurrency"


def test_an_admin_key_spends_its_own_budget() -> None:
    limits = TenantLimits(rate_per_sec=0.001, burst=1, max_concurrent=5, clock=FakeClock())
    assert isinstance(limits.admit(ADMIN), Slot)
    refused = limits.admit(ADMIN)
    assert refused.key == "key:admin-key-id" and refused.detail().startswith("untenanted key admin-key-id is over")
    assert isinstance(limits.admit(Principal("other-admin1", frozenset(), None)), Slot)
    assert isinstance(limits.admit(ACME), Slot)


def test_threads_admitting_and_releasing_at_once_keep_the_count_exact() -> None:
    """The Flight door admits and releases from gRPC's threads: each slot is counted once, and a slot released
    from two threads at once frees one place."""
    cap = ConcurrencyCap(1000)
    barrier = threading.Barrier(8)

    def churn() -> None:
        barrier.wait()
        for _ in range(400):
            slot = cap.try_acquire("acme")
            assert slot is not None
            racing = threading.Thread(target=slot.release)
            racing.start()
            slot.release()
            racing.join()

    threads = [threading.Thread(target=churn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cap.in_flight("acme") == 0
    survivor = cap.try_acquire("acme")
    assert survivor is not None and cap.in_flight("acme") == 1
