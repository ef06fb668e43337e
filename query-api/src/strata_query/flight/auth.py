"""Keys on the Flight SQL door, as on HTTP: `authorization: Bearer <API key>` on every call; or, for drivers that
only speak basic auth, a handshake with `authorization: Basic` (any user name, the API key as password) that
answers the bearer token to send from then on. The key is checked by the same `authorize` as the HTTP dependency;
the call's `cache-control` and `x-strata-*` headers ride along for the handler."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import pyarrow.flight as flight

from strata_core.api_keys import ApiKeyRegistry, authorize
from strata_core.errors import InvalidInput, StrataError, Unauthorized
from strata_core.principal import Principal, Scope
from strata_frame.web.problems import problem_of
from strata_frame.web.tenant_limits import Slot
from strata_query.flight.status import flight_error

QUERY_SCOPES = (Scope.QUERY, Scope.ADMIN)
MIDDLEWARE_KEY = "strata"


@dataclass
class CallHeaders:
    cache_control: str | None = None
    # An engine's name to run on instead of the one the plan's size selects (HTTP: the request's `engine`).
    engine: str | None = None
    # At most the server's cap (HTTP: the request's `max_rows`).
    max_rows: int | None = None


class Authenticated(flight.ServerMiddleware):
    """One call's caller, its headers, and the slot under the tenant's cap it holds while it runs (`limits.py`)."""

    def __init__(self, principal: Principal, headers: CallHeaders, token: str | None = None) -> None:
        self.principal = principal
        self.headers = headers
        self._token = token
        self._slot: Slot | None = None

    def sending_headers(self) -> dict[str, str]:
        # Basic auth's answer: the bearer token the client sends from then on.
        return {"authorization": f"Bearer {self._token}"} if self._token else {}

    def hold(self, slot: Slot | None) -> None:
        self._slot = slot

    def hand_over(self) -> Slot | None:
        """The call's slot, which from now on its taker frees (a ticket outliving the call)."""
        slot, self._slot = self._slot, None
        return slot

    def call_completed(self, exception: Exception | None) -> None:
        # However the call ended (answered, failed, its client gone, a stream cut off), its slot is free.
        if self._slot is not None:
            self._slot.release()


class HeaderHandshake(flight.ServerAuthHandler):
    """Flight's Handshake, answered by headers alone: `KeyAuthFactory` checks the call's key (a basic one gets
    its bearer token in the response headers); without a handler pyarrow refuses Handshake as unimplemented."""

    def authenticate(self, outgoing, incoming) -> None:
        return None

    def is_valid(self, token: bytes) -> str:
        # Every call's key was already checked by the middleware; no session token is kept.
        return ""


class KeyAuthFactory(flight.ServerMiddlewareFactory):
    def __init__(self, api_keys: ApiKeyRegistry) -> None:
        self.api_keys = api_keys

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[str]]) -> Authenticated:
        try:
            key, token = presented_key(_first(headers, "authorization"), _first(headers, "x-api-key"))
            principal = authorize(self.api_keys, key, QUERY_SCOPES)
            return Authenticated(principal, call_headers(headers), token)
        except StrataError as exc:
            raise flight_error(problem_of(exc)) from None


def presented_key(authorization: str | None, api_key: str | None) -> tuple[str | None, str | None]:
    """(the key, the token to answer with): a bearer token is the key; basic credentials' password is, and is
    answered as the bearer token; else the `x-api-key` header, as on HTTP."""
    scheme, _, credential = (authorization or "").partition(" ")
    if scheme.lower() == "bearer":
        return credential.strip() or None, None
    if scheme.lower() == "basic":
        try:
            encoded = credential.strip()
            # Some drivers (Go's, under ADBC) leave the padding out.
            decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
            _, _, password = decoded.decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthorized("basic credentials are not base64 of 'user:password'",
                               headers={"WWW-Authenticate": "Basic"}) from None
        return password or None, password or None
    return api_key, None


def call_headers(headers: dict[str, list[str]]) -> CallHeaders:
    max_rows = _first(headers, "x-strata-max-rows")
    if max_rows is not None and (not max_rows.isdigit() or int(max_rows) < 1):
        raise InvalidInput.field("x-strata-max-rows", f"must be a positive integer, not {max_rows!r}")
    return CallHeaders(cache_control=_first(headers, "cache-control"), engine=_first(headers, "x-strata-engine"),
                       max_rows=int(max_rows) if max_rows is not None else None)


def _first(headers: dict[str, list[str]], name: str) -> str | None:
    values = headers.get(name) or []
    value = values[0] if values else None
    return value.decode() if isinstance(value, bytes) else value
