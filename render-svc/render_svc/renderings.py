"""Renderings: Prepare stores what a render captured; GetRendering hands out media URLs."""

from __future__ import annotations

import asyncio
import re
import secrets
import shutil
import time
from collections.abc import Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cachetools import LRUCache
from pymongo.errors import DuplicateKeyError

from render_svc.records import RenderCollections
from render_svc.renderer import SOURCE_FILE, Capture, DesignInput, Renderer
from render_svc.signed_urls import SignedUrls
from render_svc.stickers import Sticker
from render_svc.storage import MediaStore
from render_svc.video_rules import bounds_for
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import InvalidArgument, NotFound
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document

log = get_logger(__name__)

RENDERING_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
PREPARED, FINISHING, FINISHED, FAILED = "prepared", "finishing", "finished", "failed"
# Final renderings kept in memory per replica (a few KiB each).
FINAL_CACHE_SIZE = 10_000
CONTENT_TYPES = {"image": "image/jpeg", "video": "video/mp4"}
OVERLAY_FILE = "overlay.png"


def check_rendering_id(rendering_id: str) -> str:
    if not RENDERING_ID.match(rendering_id):
        raise InvalidArgument("rendering_id must be 1 to 128 of A-Z a-z 0-9 . _ : -")
    return rendering_id


def rendering_key(organization_id: str, rendering_id: str, suffix: str) -> str:
    # A random part per attempt: racing duplicates never overwrite each other's objects.
    return f"renderings/{organization_id}/{rendering_id}/{secrets.token_hex(8)}{suffix}"


@dataclass(frozen=True)
class Rendering:
    organization_id: str
    rendering_id: str
    purpose: int
    state: str
    media_kind: str
    warnings: list[str]
    stickers: list[Sticker]
    capture_key: str
    created_at: datetime
    duration_seconds: float | None = None
    video_src: str | None = None
    media_key: str | None = None
    preview_key: str | None = None
    error_message: str | None = None
    finished_at: datetime | None = None
    bounds: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_doc(cls, doc: Document) -> Rendering:
        return from_document(
            cls,
            doc,
            purpose=int(doc.get("purpose", 0)),
            warnings=list(doc.get("warnings") or []),
            stickers=[_sticker_of(stored) for stored in doc.get("stickers") or []],
            bounds=dict(doc.get("bounds") or {}),
        )

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.media_kind]


@dataclass(frozen=True)
class MediaUrls:
    media_url: str
    preview_url: str
    expires_at: datetime


def _sticker_of(stored: Document) -> Sticker:
    return Sticker(
        stored["kind"],
        dict(stored.get("attributes") or {}),
        float(stored["x"]),
        float(stored["y"]),
        float(stored["width"]),
        float(stored["height"]),
        stored.get("photoappUserId") or "",
    )


def _sticker_doc(sticker: Sticker) -> Document:
    doc: Document = {
        "kind": sticker.kind,
        "attributes": sticker.attributes,
        "x": sticker.x,
        "y": sticker.y,
        "width": sticker.width,
        "height": sticker.height,
    }
    if sticker.photoapp_user_id:
        doc["photoappUserId"] = sticker.photoapp_user_id
    return doc


@component
class Renderings:
    _: KW_ONLY
    records: RenderCollections
    store: MediaStore
    renderer: Renderer
    clock: Clock
    work_root: Path
    media_url_seconds: int = 3600
    kept_video_sources: int = 2
    _urls: SignedUrls = field(init=False)
    # Finished and failed renderings never change again (every update of a rendering
    # requires it prepared or finishing, and none is deleted), so status polls of them
    # skip the database. By "<org>:<rendering id>".
    _final: LRUCache[str, Rendering] = field(
        init=False, default_factory=lambda: LRUCache(maxsize=FINAL_CACHE_SIZE)
    )
    # Prepares running in this replica, by "<org>:<rendering id>" (see prepare).
    _preparing: dict[str, asyncio.Task[Rendering]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._urls = SignedUrls(store=self.store, clock=self.clock, seconds=self.media_url_seconds)

    def keep_source(self, work: Path) -> bool:
        """Keeps a prepared rendering's video source for its composite, unless the kept ones
        would then number more than allowed: it is dropped and its composite fetches it
        again. Bounds the local disk whatever the number of renderings waiting to finish."""
        kept = sum(1 for _ in self.work_root.glob(f"*/*/{SOURCE_FILE}"))
        if kept <= self.kept_video_sources:
            return True
        (work / SOURCE_FILE).unlink(missing_ok=True)
        return False

    def work_dir(self, organization_id: str, rendering_id: str) -> Path:
        """Local files of one rendering between Prepare and Finish (this replica only)."""
        return self.work_root / f"{organization_id}__{rendering_id}"

    async def find(self, organization_id: str, rendering_id: str) -> Rendering | None:
        name = f"{organization_id}:{rendering_id}"
        cached = self._final.get(name)
        if cached is not None:
            return cached
        doc = await self.records.renderings.find_one(
            {"organizationId": organization_id, "renderingId": rendering_id}
        )
        if not doc:
            return None
        found = Rendering.from_doc(doc)
        if found.state in (FINISHED, FAILED):
            self._final[name] = found
        return found

    async def get(self, organization_id: str, rendering_id: str) -> Rendering:
        found = await self.find(organization_id, check_rendering_id(rendering_id))
        if found is None:
            raise NotFound(f"rendering {rendering_id} not found")
        return found

    async def find_many(self, organization_id: str, ids: Sequence[str]) -> dict[str, Rendering]:
        if not ids:
            return {}
        cursor = self.records.renderings.find(
            {"organizationId": organization_id, "renderingId": {"$in": list(ids)}}
        )
        return {doc["renderingId"]: Rendering.from_doc(doc) async for doc in cursor}

    async def prepare(
        self,
        organization_id: str,
        rendering_id: str,
        design: DesignInput,
        purpose: int,
        min_seconds: float = 0.0,
        max_seconds: float = 0.0,
    ) -> Rendering:
        """Renders and stores; a repeat returns the stored rendering and renders nothing.

        Identical calls that race (a retry while the first still runs, concurrent identical
        schedules) share the one render already running in this replica: rendering twice
        would waste a browser slot, and the loser's files would sit in the work directory the
        winner's Finish removes.
        """
        check_rendering_id(rendering_id)
        name = f"{organization_id}:{rendering_id}"
        running = self._preparing.get(name)
        if running is None:
            running = asyncio.create_task(
                self._prepare(
                    organization_id, rendering_id, design, purpose, min_seconds, max_seconds
                )
            )
            self._preparing[name] = running
            running.add_done_callback(lambda task: self._prepared(name, task))
        # Shielded: a caller that gives up (its deadline) leaves the render to its twins.
        return await asyncio.shield(running)

    def _prepared(self, name: str, task: asyncio.Task[Rendering]) -> None:
        self._preparing.pop(name, None)
        if not task.cancelled():
            task.exception()  # retrieved here, so a render nobody waits for any more is quiet

    async def _prepare(
        self,
        organization_id: str,
        rendering_id: str,
        design: DesignInput,
        purpose: int,
        min_seconds: float,
        max_seconds: float,
    ) -> Rendering:
        bounds = bounds_for(purpose, min_seconds, max_seconds)
        started = time.perf_counter()
        existing = await self.find(organization_id, rendering_id)
        if existing is not None:
            return existing
        found = time.perf_counter()
        # Made by the render when it needs it: an image design keeps no file.
        work = self.work_dir(organization_id, rendering_id) / secrets.token_hex(4)
        keep_files = False
        try:
            capture = await self.renderer.render(organization_id, design, bounds, work)
            rendered = time.perf_counter()
            stored = await self._store_capture(
                organization_id, rendering_id, purpose, capture, asdict(bounds)
            )
            log.info(
                "prepared",
                rendering=f"{organization_id}:{rendering_id}",
                media_kind=capture.media_kind,
                milliseconds={
                    "find": round((found - started) * 1000),
                    "render": round((rendered - found) * 1000),
                    "store": round((time.perf_counter() - rendered) * 1000),
                },
            )
            if stored.created_by_us and capture.media_kind == "video":
                (work / OVERLAY_FILE).write_bytes(capture.image)
                keep_files = True
                self.keep_source(work)
            return stored.rendering
        finally:
            if not keep_files:
                shutil.rmtree(work, ignore_errors=True)

    async def _store_capture(
        self,
        organization_id: str,
        rendering_id: str,
        purpose: int,
        capture: Capture,
        bounds: dict[str, Any],
    ) -> _Stored:
        video = capture.media_kind == "video"
        key = rendering_key(organization_id, rendering_id, ".png" if video else ".jpg")
        doc: Document = {
            "_id": f"{organization_id}:{rendering_id}",
            "organizationId": organization_id,
            "renderingId": rendering_id,
            "purpose": purpose,
            "state": PREPARED,
            "mediaKind": capture.media_kind,
            "warnings": capture.warnings,
            "stickers": [_sticker_doc(s) for s in capture.stickers],
            "captureKey": key,
            "createdAt": self.clock.now(),
            "bounds": bounds,
        }
        if video:
            doc["videoSrc"] = capture.video_src
            doc["durationSeconds"] = capture.duration_seconds
        # The object and the record are written side by side (one round trip less on the
        # path of every Prepare); whichever fails undoes the other.
        put, insert = await asyncio.gather(
            self.store.put(key, capture.image, "image/png" if video else "image/jpeg"),
            self.records.renderings.insert_one(doc),
            return_exceptions=True,
        )
        if isinstance(insert, DuplicateKeyError):
            # An identical call raced us and won: its rendering is the rendering.
            await self.store.delete(key)
            found = await self.find(organization_id, rendering_id)
            if found is None:
                raise insert
            return _Stored(found, created_by_us=False)
        if isinstance(insert, BaseException):
            await self.store.delete(key)
            raise insert
        if isinstance(put, BaseException):
            await self.records.renderings.delete_one({"_id": doc["_id"], "captureKey": key})
            raise put
        return _Stored(Rendering.from_doc(doc), created_by_us=True)

    async def urls(self, rendering: Rendering) -> MediaUrls | None:
        """Presigned GET URLs of a finished rendering's media and preview."""
        if rendering.state != FINISHED or not rendering.media_key or not rendering.preview_key:
            return None
        media, media_until = await self._urls.get(rendering.media_key)
        preview, preview_until = await self._urls.get(rendering.preview_key)
        return MediaUrls(media, preview, min(media_until, preview_until))

    async def preview_url(self, rendering: Rendering) -> str | None:
        if rendering.state != FINISHED or not rendering.preview_key:
            return None
        url, _until = await self._urls.get(rendering.preview_key)
        return url


@dataclass(frozen=True)
class _Stored:
    rendering: Rendering
    created_by_us: bool
