"""The proxy's per-tenant limits on the Flight SQL door: the same `TenantLimits` (token bucket, then a cap on what
runs at once) with the same settings (`proxy_rate_per_sec`, `proxy_burst`, `proxy_max_concurrent_per_tenant`), so
a tenant querying over gRPC, which never passes through the proxy, is held to the budget it has over HTTP.

What a request is here (`Charge`): Flight SQL spreads one HTTP request over several calls, so each call is charged
for what it does, and one query costs what it costs through the proxy: one token, one slot while it runs.
- A statement's GetFlightInfo runs the query: a token and a slot. The slot goes with the ticket it answers and
  then with the DoGet that streams the result, and is freed when the stream ends, the ticket is given up or
  cancelled (as the proxy holds a streaming answer's slot until its body is done).
- GetTables (it reads the metastore): a token and a slot while the call runs.
- CreatePreparedStatement parses the SQL: a slot while it parses, no token. ADBC prepares every statement it
  runs, so a token here would halve an ADBC client's rate against an HTTP client's.
- Free: cancelling, which frees what the cap counts (a tenant at its cap must still be able to cancel), and what
  is answered from memory with nothing of the tenant's (SQL info, catalogs, schemas, table types, their schemas,
  the action list, handshakes, closing a prepared statement, which keeps nothing).

A refusal is UNAVAILABLE carrying the problem an HTTP client gets from the proxy (status 429, the limit and when to
retry in its detail; see `status.py` for why not RESOURCE_EXHAUSTED) and is counted in
`strata_flight_rejections_total{reason, tenant}`, the proxy's `strata_proxy_rejections_total` twin. Unlike the
proxy, the door answers a refusal at once rather than holding it: the proxy's pacer spares its one event loop,
while here a held refusal would pin one of gRPC's threads, which every tenant's calls share.

Replicas: each query-api replica's door keeps its own budgets, as each proxy process does, so a tenant gets the
configured rate and cap on every door it is connected to. A gRPC client keeps its calls on one connection, so one
client sees exactly the configured budget, and its HTTP and Flight traffic are budgeted apart. Dividing the rate
by the number of replicas would give such a client a fraction of what the operator configured.
"""

from __future__ import annotations

import enum
import math

from prometheus_client import CollectorRegistry, Counter

from strata_core.config import Settings
from strata_core.errors import TooManyRequests
from strata_frame.web.tenant_limits import Refusal, TenantLimits
from strata_query.flight.auth import Authenticated


class Charge(enum.Enum):
    # A token, and a slot while the work runs.
    REQUEST = "request"
    # A slot while the call runs, no token: work that serves a request counted elsewhere.
    SLOT = "slot"


class FlightLimits:
    def __init__(self, settings: Settings, registry: CollectorRegistry | None) -> None:
        self.limits = TenantLimits.from_settings(settings.proxy)
        self.rejections = Counter("strata_flight_rejections",
                                  "Flight SQL calls refused over the tenant's limits, by limit and tenant",
                                  ["reason", "tenant"], registry=registry)

    def admit(self, caller: Authenticated, charge: Charge) -> None:
        """Gives the call a slot (freed when the call completes, unless handed on), or refuses it."""
        admitted = self.limits.admit(caller.principal, takes_token=charge is Charge.REQUEST)
        if isinstance(admitted, Refusal):
            self.rejections.labels(admitted.reason, admitted.key).inc()
            raise TooManyRequests(admitted.detail(),
                                  headers={"Retry-After": str(math.ceil(admitted.retry_in()))})
        caller.hold(admitted)
