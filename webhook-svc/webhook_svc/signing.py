"""The optional X-Service-Signature header: HMAC-SHA256 over the timestamp and the body."""

from __future__ import annotations

import hashlib
import hmac
import string

from storypost_runtime.errors import InvalidArgument

SIGNATURE_HEADER = "X-Service-Signature"
MIN_SECRET = 16
MAX_SECRET = 256
_PRINTABLE = frozenset(string.printable) - frozenset(string.whitespace)


def check_secret(secret: str) -> str:
    """A signing secret is 16 to 256 printable ASCII characters without spaces."""
    if not MIN_SECRET <= len(secret) <= MAX_SECRET or not set(secret) <= _PRINTABLE:
        message = f"must be {MIN_SECRET} to {MAX_SECRET} printable ASCII characters without spaces"
        raise InvalidArgument(
            f"invalid signing secret: {message}", field_violations={"signingSecret": [message]}
        )
    return secret


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>`.

    The timestamp is the attempt's own (a receiver can refuse old ones to stop replays); the
    body is the exact bytes sent. A receiver recomputes v1 and compares in constant time.
    """
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(secret: str, header: str, body: bytes) -> bool:
    """What a receiver does (used by our tests and shown in docs/webhooks.md)."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), header)
