"""API keys: each maps to scopes (admin, writer, worker, query) and optionally a tenant (partition_id). Free of the
web stack, so the CLI reads and writes them without importing FastAPI.

Keys come from STRATA_API_KEYS as JSON: {"<key>": {"scopes": ["writer"], "tenant": "acme"}}. Only a hash of each
key is kept in memory. `admin` satisfies every scope; a `query` key must belong to a tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from strata_core.errors import Forbidden, Unauthorized
from strata_core.principal import Principal, Scope


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class ApiKeyRegistry:
    def __init__(self, entries: dict[bytes, Principal]) -> None:
        self._entries = entries

    @classmethod
    def from_json(cls, text: str | None) -> ApiKeyRegistry:
        if not text:
            return cls({})
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("STRATA_API_KEYS must be a JSON object: key -> {scopes, tenant}")
        entries: dict[bytes, Principal] = {}
        for key, spec in raw.items():
            scopes = frozenset(Scope(s) for s in spec.get("scopes", []))
            if not scopes:
                raise ValueError("every API key needs at least one scope")
            tenant = spec.get("tenant")
            if Scope.QUERY in scopes and Scope.ADMIN not in scopes and not tenant:
                raise ValueError("a query key must belong to a tenant")
            key_id = hashlib.sha256(key.encode()).hexdigest()[:12]
            entries[_digest(key)] = Principal(key_id, scopes, tenant)
        return cls(entries)

    def add_internal_key(self, scopes: frozenset[Scope]) -> str:
        """A random key held only in this process's memory, for in-process clients (the embedded runner)."""
        key = f"strata_internal_{secrets.token_urlsafe(32)}"
        self._entries[_digest(key)] = Principal("internal", scopes, None)
        return key

    def authenticate(self, key: str | None) -> Principal:
        if not key:
            raise Unauthorized("no API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
                               headers={"WWW-Authenticate": "Bearer"})
        digest = _digest(key)
        for known, principal in self._entries.items():
            if hmac.compare_digest(known, digest):
                return principal
        raise Unauthorized("unknown API key", headers={"WWW-Authenticate": "Bearer"})


def generate_keys(tenant: str = "default") -> dict[str, dict[str, object]]:
    """A fresh key per role for a local stack."""
    return {
        f"strata_admin_{secrets.token_urlsafe(24)}": {"scopes": ["admin"], "name": "admin"},
        f"strata_writer_{secrets.token_urlsafe(24)}": {"scopes": ["writer"], "name": "writer"},
        f"strata_worker_{secrets.token_urlsafe(24)}": {"scopes": ["worker"], "name": "worker"},
        f"strata_query_{secrets.token_urlsafe(24)}": {"scopes": ["query"], "tenant": tenant, "name": "query"},
    }


def authorize(api_keys: ApiKeyRegistry, key: str | None, scopes: tuple[Scope, ...]) -> Principal:
    """The principal of `key`, which must hold one of `scopes` (admin holds them all): every door's check (the HTTP
    dependency below, query-api's Flight SQL server)."""
    principal = api_keys.authenticate(key)
    if not any(principal.allows(s) for s in scopes):
        if len(scopes) == 1:
            raise Forbidden(f"this operation needs the {scopes[0]} scope")
        raise Forbidden("this operation needs one of the scopes: " + ", ".join(scopes))
    return principal
