"""API keys of the local stack: STRATA_API_KEYS when set, else keys generated once into .strata/api-keys.json."""

from __future__ import annotations

import json
import os

from strata_core.api_keys import ApiKeyRegistry, generate_keys
from strata_core.config import Settings

KEYS_FILE = "api-keys.json"


def resolve_api_keys(settings: Settings) -> tuple[str, str]:
    """(keys JSON, where they came from). Generated keys are written with owner-only permissions."""
    if settings.api_keys:
        ApiKeyRegistry.from_json(settings.api_keys)  # refuse a malformed value before anything starts
        return settings.api_keys, "STRATA_API_KEYS"
    path = settings.home / KEYS_FILE
    if path.exists():
        text = path.read_text()
        ApiKeyRegistry.from_json(text)
        return text, str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(generate_keys(), indent=2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return text, f"{path} (generated)"


def key_with_scope(keys_json: str, *scopes: str) -> str | None:
    """The first key holding one of `scopes` (admin counts for all)."""
    for key, spec in json.loads(keys_json).items():
        held = set(spec.get("scopes", []))
        if "admin" in held or held & set(scopes):
            return key
    return None


def local_keys(settings: Settings) -> str | None:
    if settings.api_keys:
        return settings.api_keys
    path = settings.home / KEYS_FILE
    return path.read_text() if path.exists() else None
