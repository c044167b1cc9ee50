"""Jinja2 templates of the app pages, their filters and the headers every page carries."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import falcon
import jinja2
from google.protobuf.timestamp_pb2 import Timestamp

from storypost_runtime.protobuf import to_datetime

TEMPLATES = Path(__file__).parent / "templates"

# Pages run only our own script and styles. Previews are presigned URLs on the media store,
# so images may come from any http(s) origin. form-action is left open on purpose: connect
# forms redirect to the platform's sign-in page, and Chromium applies form-action to that
# redirect too.
PAGE_CSP = (
    "default-src 'self'; img-src 'self' data: http: https:; media-src 'self' http: https:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
# The editor's live preview is a sandboxed srcdoc iframe, which inherits this policy: the
# user's page may use inline styles, fonts and media from anywhere, but never run a script
# (the sandbox has no allow-scripts and no allow-same-origin).
EDITOR_CSP = (
    "default-src 'self'; img-src * data: blob:; media-src * data: blob:; font-src * data:; "
    "style-src 'self' 'unsafe-inline' http: https:; script-src 'self'; connect-src 'self'; "
    "frame-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Page URLs carry organization ids and draft ids: keep them to ourselves.
    "Referrer-Policy": "same-origin",
}


def as_datetime(moment: Timestamp | datetime | None) -> datetime | None:
    """A proto Timestamp (unset = seconds and nanos 0) or a datetime, in UTC."""
    if moment is None:
        return None
    if isinstance(moment, Timestamp):
        if moment.seconds == 0 and moment.nanos == 0:
            return None
        return to_datetime(moment)
    return moment.astimezone(UTC)


# The signed-in user's time zone while a page renders (each worker thread of the edge renders one
# page at a time): every date a template shows goes through `when`, so none is missed.
_ZONE: ContextVar[ZoneInfo | None] = ContextVar("zone", default=None)
UTC_ZONE = ZoneInfo("UTC")


@contextmanager
def dates_in(zone: ZoneInfo) -> Iterator[None]:
    token = _ZONE.set(zone)
    try:
        yield
    finally:
        _ZONE.reset(token)


def format_when(
    moment: Timestamp | datetime | None, empty: str = "—", zone: ZoneInfo | None = None
) -> str:
    """`23 Nov 2026, 10:53 UTC` or `23 Nov 2026, 11:53 CET`: in the user's time zone (the
    page's, unless one is given), always with the zone's abbreviation."""
    found = as_datetime(moment)
    if found is None:
        return empty
    local = found.astimezone(zone or _ZONE.get() or UTC_ZONE)
    return f"{local.day} {local:%b %Y, %H:%M} {local:%Z}"


def day(moment: Timestamp | datetime | None) -> str:
    """`2026-11-23`: the day it falls on in the page's time zone (for calendar links)."""
    found = as_datetime(moment)
    return found.astimezone(_ZONE.get() or UTC_ZONE).date().isoformat() if found else ""


def iso(moment: Timestamp | datetime | None) -> str:
    found = as_datetime(moment)
    return found.strftime("%Y-%m-%dT%H:%M:%SZ") if found else ""


class Views:
    """Renders templates into Falcon responses."""

    def __init__(self, static_url: Callable[[str], str]) -> None:
        self._env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.filters["when"] = format_when
        self._env.filters["iso"] = iso
        self._env.filters["day"] = day
        self._env.globals["static"] = static_url

    def html(self, template: str, context: Mapping[str, Any]) -> str:
        zone = context.get("zone")
        with dates_in(zone if isinstance(zone, ZoneInfo) else UTC_ZONE):
            return self._env.get_template(template).render(**context)

    def render(
        self,
        resp: falcon.Response,
        template: str,
        context: Mapping[str, Any],
        *,
        status: int = 200,
        csp: str = PAGE_CSP,
    ) -> None:
        resp.status = status
        resp.content_type = falcon.MEDIA_HTML
        resp.set_headers(PAGE_HEADERS)
        resp.set_header("Content-Security-Policy", csp)
        resp.text = self.html(template, context)
