"""The stable temp blob URL: `<public_url>/o/<org>/blobs/<uuid>/<key>`, built and recognised."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

# 128 random bits, URL-safe: the URL itself is the permission to read the blob.
KEY_BYTES = 16
_KEY = r"[A-Za-z0-9_-]{16,64}"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_PATH = re.compile(rf"^/o/(?P<org>[A-Za-z0-9_-]{{1,64}})/blobs/(?P<uuid>{_UUID})/(?P<key>{_KEY})$")


def new_key() -> str:
    return secrets.token_urlsafe(KEY_BYTES)


def blob_url(public_app_url: str, temp_blob_uuid: str, key: str) -> str:
    """`public_app_url` is the organization's base on the edge: `http://HOST:PORT/o/<org>`."""
    return f"{public_app_url.rstrip('/')}/blobs/{temp_blob_uuid}/{key}"


@dataclass(frozen=True)
class BlobRef:
    organization_id: str
    temp_blob_uuid: str
    key: str


class BlobUrlMatcher:
    """Tells whether a URL is one of our own blob URLs (same scheme, host and port)."""

    def __init__(self, public_url: str) -> None:
        parts = urlsplit(public_url.rstrip("/"))
        self._origin = (parts.scheme.lower(), (parts.hostname or "").lower(), _port(parts))
        self._prefix = parts.path.rstrip("/")

    def match(self, url: str) -> BlobRef | None:
        parts = urlsplit(url)
        if (parts.scheme.lower(), (parts.hostname or "").lower(), _port(parts)) != self._origin:
            return None
        path = parts.path
        if self._prefix:
            if not path.startswith(self._prefix + "/"):
                return None
            path = path[len(self._prefix) :]
        found = _PATH.match(path)
        if found is None:
            return None
        return BlobRef(found["org"], found["uuid"], found["key"])


def _port(parts: SplitResult) -> int:
    if parts.port is not None:
        return parts.port
    return 443 if parts.scheme.lower() == "https" else 80
