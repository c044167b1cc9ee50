"""The app's CSS and JavaScript, served by the edge with content-hash cache busting."""

from __future__ import annotations

import hashlib
from pathlib import Path

import falcon

STATIC_DIR = Path(__file__).parent / "static"
STATIC_ROUTE = "/static/{name}"
TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


class StaticFiles:
    """GET /static/<name>: the few files of static/, read once at start-up."""

    def __init__(self, directory: Path = STATIC_DIR) -> None:
        self._files: dict[str, tuple[bytes, str, str]] = {}
        for path in sorted(directory.iterdir()):
            if path.suffix in TYPES and path.is_file():
                content = path.read_bytes()
                digest = hashlib.sha256(content).hexdigest()[:12]
                self._files[path.name] = (content, TYPES[path.suffix], digest)

    def url(self, name: str) -> str:
        """The file's URL with its content hash, so a changed file is fetched again."""
        return f"/static/{name}?v={self._files[name][2]}"

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        req.context.procedure = "app:static"
        found = self._files.get(name)
        if found is None:
            resp.status = 404
            resp.content_type = falcon.MEDIA_TEXT
            resp.text = "not found"
            return
        content, content_type, digest = found
        resp.etag = digest
        if req.get_param("v") == digest:
            resp.cache_control = ["public", "max-age=31536000", "immutable"]
        else:
            resp.cache_control = ["no-cache"]
        if req.if_none_match and any(tag == digest for tag in req.if_none_match):
            resp.status = 304
            return
        resp.content_type = content_type
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.data = content
