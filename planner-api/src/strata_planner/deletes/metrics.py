"""Prometheus metrics of a delete's acceptance: how the splits in its time range were decided, so an operator sees
what published artifacts save the rewrites (the status body's `splits_covered` counts only the covered ones).

Kept per registry and made on first use rather than by a startup hook: acceptance needs them whether or not the
app runs its background work (tests build planner-api without it)."""

from __future__ import annotations

import threading
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter

from strata_metastore.delete_repository import Accepted


class DeleteMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.splits = Counter(
            "strata_delete_splits_examined",
            "Published splits in an accepted delete's scope and time range, by what decided them: covered (to be "
            "rewritten), ruled_out_by_statistics (split min/max), ruled_out_by_artifacts (blooms, bitmaps, zone "
            "maps, full-text indexes)", ["decision"], registry=registry)

    def observe_acceptance(self, accepted: Accepted) -> None:
        self.splits.labels("covered").inc(accepted.covered)
        self.splits.labels("ruled_out_by_statistics").inc(accepted.ruled_out_by_statistics)
        self.splits.labels("ruled_out_by_artifacts").inc(accepted.ruled_out_by_artifacts)


_BY_REGISTRY: WeakKeyDictionary[CollectorRegistry, DeleteMetrics] = WeakKeyDictionary()
_LOCK = threading.Lock()


def delete_metrics(registry: CollectorRegistry) -> DeleteMetrics:
    with _LOCK:
        found = _BY_REGISTRY.get(registry)
        if found is None:
            found = _BY_REGISTRY[registry] = DeleteMetrics(registry)
        return found
