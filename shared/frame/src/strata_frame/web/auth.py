"""How a request presents an API key (the OpenAPI security schemes) and the route dependencies that require a
scope; the keys themselves, their scopes and tenants, are `strata_core.api_keys`'s.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from strata_core.api_keys import authorize
from strata_core.principal import Principal, Scope

# The two ways to present a key, as OpenAPI security schemes: every authenticated operation lists both (either
# one will do), so /docs has an Authorize button and generated clients know where the key goes.
_KEY_SCOPES = "Scopes: `admin` (everything), `writer`, `worker`, `query`; each operation names the one it needs."
bearer_scheme = HTTPBearer(scheme_name="bearer", auto_error=False,
                           description=f"`Authorization: Bearer <API key>`. {_KEY_SCOPES}")
api_key_scheme = APIKeyHeader(name="X-API-Key", scheme_name="apiKey", auto_error=False,
                              description=f"`X-API-Key: <API key>`. {_KEY_SCOPES}")


async def presented_key(
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
    api_key: Annotated[str | None, Security(api_key_scheme)],
) -> str | None:
    """The key the caller sent, by either scheme (a bearer token first)."""
    return bearer.credentials if bearer is not None else api_key


def require_any(*scopes: Scope):
    """FastAPI dependency: the caller's principal, which must hold one of `scopes` (admin holds them all). The
    scopes ride on the dependency so the OpenAPI document can name them on each operation."""

    async def dependency(request: Request, key: Annotated[str | None, Security(presented_key)]) -> Principal:
        return authorize(request.app.state.strata.api_keys, key, scopes)

    dependency.__name__ = "require_" + "_or_".join(scopes)
    dependency.required_scopes = scopes
    return dependency


def require(scope: Scope):
    """FastAPI dependency: the caller's principal, which must hold `scope` (or admin)."""
    return require_any(scope)
