"""Secrets kept at rest encrypted (Fernet: AES-128-CBC + HMAC-SHA256) with rotatable keys.

Needs `cryptography` (the account and webhook extras): only services that keep secrets
import this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import SecretStr

from storypost_runtime.settings import BaseServiceSettings, env_variable, refuse_published_secret

# How to make a key: every refusal of a key setting says it.
GENERATE_KEY = (
    "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
)


def split_keys(value: str) -> list[str]:
    """Comma-separated keys of a setting, blanks dropped."""
    return [key.strip() for key in value.split(",") if key.strip()]


def check_keys(keys: Sequence[str], setting: str) -> None:
    """Raises ValueError naming `setting` unless every key is a Fernet key."""
    if not keys:
        raise ValueError(f"{setting} must name at least one Fernet key")
    for key in keys:
        try:
            Fernet(key)
        except ValueError:
            raise ValueError(
                f"{setting}: each key must be url-safe base64 of 32 bytes ({GENERATE_KEY})"
            ) from None


def setting_keys(settings: BaseServiceSettings, field: str, development_key: str) -> list[str]:
    """The Fernet keys of a key-list setting, checked: each one a Fernet key, and outside
    development set and none of them the published `development_key` (settings'
    refuse_published_secret). Raises ValueError naming the variable."""
    value = getattr(settings, field)
    keys = split_keys(value.get_secret_value() if isinstance(value, SecretStr) else str(value))
    refuse_published_secret(
        settings, field, keys, published=[development_key], how=f"generate: {GENERATE_KEY}"
    )
    check_keys(keys, env_variable(settings, field))
    return keys


class SecretBox:
    """Encrypts with the first key, decrypts with any (MultiFernet), so keys can rotate."""

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    def encrypt(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode("ascii")

    def decrypt(self, stored: str) -> str | None:
        """The secret, or None when no key opens it (a key was dropped)."""
        try:
            return self._fernet.decrypt(stored.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            return None
