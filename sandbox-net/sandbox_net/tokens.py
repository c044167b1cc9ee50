"""Signed, self-contained tokens: valid across restarts, expiring like real ones."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field
from typing import Literal

from storypost_runtime.component import component

Kind = Literal["at", "rt"]


@dataclass(frozen=True)
class TokenClaims:
    kind: Kind
    platform: str
    account_id: str
    username: str
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@component
class TokenSigner:
    secret: str
    _key: bytes = field(init=False)

    def __post_init__(self) -> None:
        self._key = self.secret.encode()

    def issue(self, claims: TokenClaims) -> str:
        payload = _b64(
            json.dumps(
                {
                    "k": claims.kind,
                    "p": claims.platform,
                    "a": claims.account_id,
                    "u": claims.username,
                    "e": int(claims.expires_at),
                    "n": secrets.token_hex(8),
                },
                separators=(",", ":"),
            ).encode()
        )
        return f"sbx{claims.kind}.{payload}.{self._sign(payload)}"

    def read(self, token: str) -> TokenClaims | None:
        """The claims of a token this sandbox issued (expired or not), else None."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] not in ("sbxat", "sbxrt"):
            return None
        if not hmac.compare_digest(parts[2], self._sign(parts[1])):
            return None
        try:
            data = json.loads(_unb64(parts[1]))
            return TokenClaims(data["k"], data["p"], data["a"], data["u"], float(data["e"]))
        except (ValueError, KeyError, TypeError):
            return None

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest()[:24])
