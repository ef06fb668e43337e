"""Who calls: an API key's scopes and, for a tenant-bound key, its tenant. A plain value, free of the web stack, so
the use cases that check a caller's tenant (deletes, artifact reads) take it without importing `web`; the keys
themselves and how a request presents one are `web/auth.py`'s."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from strata_core.errors import Forbidden


class Scope(enum.StrEnum):
    ADMIN = "admin"
    WRITER = "writer"
    WORKER = "worker"
    QUERY = "query"


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    scopes: frozenset[Scope]
    tenant: str | None

    def allows(self, scope: Scope) -> bool:
        return Scope.ADMIN in self.scopes or scope in self.scopes

    def check_tenant(self, partition_id: str) -> None:
        """A tenant-bound key acts only on its own partition."""
        if self.tenant is not None and partition_id != self.tenant:
            raise Forbidden(f"this key belongs to tenant {self.tenant!r} and cannot act on partition {partition_id!r}")
