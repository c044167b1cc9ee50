"""Finish: composite, preview and upload in the background, under a lease.

A rendering moves PREPARED -> FINISHING (a lease with a token) -> FINISHED or FAILED; each
move is one single-document update guarded by the expected state (and the lease token). A
finisher that dies leaves a lease that runs out; the resume loop (or the next Finish call)
takes the rendering over. Its callers read the end state with GetRendering (publish-svc polls
it while a due post waits for its rendering): no event is sent, since none had a reader.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import KW_ONLY, field
from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from pymongo import ReturnDocument
from tenacity import AsyncRetrying, retry_if_not_exception_type, stop_after_attempt

from render_svc.ffmpeg import MediaToolError, MediaTools
from render_svc.records import RenderCollections
from render_svc.renderer import SOURCE_FILE, Renderer
from render_svc.renderings import (
    FAILED,
    FINISHED,
    FINISHING,
    OVERLAY_FILE,
    PREPARED,
    Rendering,
    Renderings,
    check_rendering_id,
    rendering_key,
)
from render_svc.storage import MediaStore
from render_svc.video_rules import DurationBounds
from storypost_runtime.backoff import STORAGE
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import DomainError, NotFound
from storypost_runtime.leases import renewing
from storypost_runtime.logs import get_logger
from storypost_runtime.metrics import MetricsIn
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import TaskSet, run_passes

log = get_logger(__name__)

COMPOSITE_TIMEOUT_SECONDS = 1800.0


def finish_durations(registry: CollectorRegistry | None) -> Histogram:
    return MetricsIn(registry).histogram(
        "storypost_render_finish_seconds",
        "Seconds a finish took (video composite, preview, upload), by media kind and outcome",
        "media",
        "outcome",
        buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
    )


@component
class Finisher:
    _: KW_ONLY
    records: RenderCollections
    renderings: Renderings
    renderer: Renderer
    store: MediaStore
    tools: MediaTools
    clock: Clock
    lease_seconds: float = 30.0
    composite_concurrency: int = 2
    durations: Histogram | None = None
    _lease: timedelta = field(init=False)
    _composites: asyncio.Semaphore = field(init=False)
    _tasks: TaskSet = field(init=False, default_factory=TaskSet)
    # Seconds each finish took (composite, preview, upload), by media kind and outcome.
    _durations: Histogram = field(init=False)

    def __post_init__(self) -> None:
        self._lease = timedelta(seconds=self.lease_seconds)
        self._composites = asyncio.Semaphore(self.composite_concurrency)
        self._durations = self.durations or finish_durations(None)

    async def finish(self, organization_id: str, rendering_id: str) -> Rendering:
        """Starts finishing in the background; returns the rendering as it stands."""
        check_rendering_id(rendering_id)
        now = self.clock.now()
        token = secrets.token_hex(8)
        taken = await self.records.renderings.find_one_and_update(
            {
                "organizationId": organization_id,
                "renderingId": rendering_id,
                "$or": [
                    {"state": PREPARED},
                    # A finisher that died: its lease ran out.
                    {"state": FINISHING, "leaseUntil": {"$lte": now}},
                ],
            },
            {"$set": {"state": FINISHING, "leaseUntil": now + self._lease, "leaseToken": token}},
            return_document=ReturnDocument.AFTER,
        )
        if taken is None:
            return await self.renderings.get(organization_id, rendering_id)
        self._start(taken, token)
        return Rendering.from_doc(taken)

    def _start(self, doc: Document, token: str) -> None:
        self._tasks.spawn(self._run(doc, token), name=f"finish {doc['_id']}")

    async def resume_expired(self) -> int:
        """Takes over renderings whose finisher died (lease ran out). Returns how many."""
        now = self.clock.now()
        count = 0
        cursor = self.records.renderings.find(
            {"state": FINISHING, "leaseUntil": {"$lte": now}},
            {"organizationId": 1, "renderingId": 1},
        ).limit(20)
        async for doc in cursor:
            await self.finish(doc["organizationId"], doc["renderingId"])
            count += 1
        return count

    async def resume_forever(self, interval_seconds: float) -> None:
        """Resumes expired renderings every interval (errors are logged, retried)."""

        async def resume_then_wait() -> int:
            await self.resume_expired()
            return 0  # what it took over finishes under fresh leases: wait the interval

        await run_passes(
            resume_then_wait,
            lambda error: log.warning("resuming renderings failed", error=str(error)),
            poll_seconds=interval_seconds,
        )

    async def wait_idle(self) -> None:
        """Waits for the running finishers (tests, shutdown)."""
        await self._tasks.wait_idle()

    async def close(self) -> None:
        await self._tasks.close()

    async def _run(self, doc: Document, token: str) -> None:
        rendering = Rendering.from_doc(doc)
        started = time.perf_counter()
        outcome = "failed"
        try:
            async with self._keeping_lease(doc, token):
                if await self._finish_one(doc, token, rendering):
                    outcome = "finished"
        finally:
            self._durations.labels(rendering.media_kind, outcome).observe(
                time.perf_counter() - started
            )

    def _keeping_lease(self, doc: Document, token: str) -> AbstractAsyncContextManager[None]:
        """Renews the lease while the work runs: the lease can stay short, so a replica killed
        mid-finish (kill -9, no shutdown) holds its renderings — and the posts waiting for
        them — for one short lease, not for as long as the longest composite may take."""

        async def renew() -> bool:
            result = await self.records.renderings.update_one(
                {"_id": doc["_id"], "state": FINISHING, "leaseToken": token},
                {"$set": {"leaseUntil": self.clock.now() + self._lease}},
            )
            return result.matched_count == 1

        def failed(error: Exception) -> None:
            log.warning("renewing a finishing lease failed", error=str(error))

        return renewing(renew, failed, lease=self._lease, name=f"lease {doc['_id']}")

    async def _finish_one(self, doc: Document, token: str, rendering: Rendering) -> bool:
        """True when the rendering ended FINISHED, False when it ended FAILED."""
        org, rid = rendering.organization_id, rendering.rendering_id
        try:
            if rendering.media_kind == "image":
                # The captured JPEG is the media and the full-size preview.
                media_key = preview_key = rendering.capture_key
            else:
                media_key, preview_key = await self._composite(rendering)
        except asyncio.CancelledError:
            # Shutting down: let the lease run out now, so a replica takes it over at once.
            await asyncio.shield(self._give_up_lease(doc, token))
            raise
        except Exception as error:
            message = _failure_message(error)
            if not isinstance(error, DomainError | MediaToolError):
                log.exception("finishing a rendering failed", rendering=doc["_id"])
            await self._end(doc, token, FAILED, {"errorMessage": message})
            return False
        finally:
            if rendering.media_kind == "video":
                shutil.rmtree(self.renderings.work_dir(org, rid), ignore_errors=True)
        await self._end(doc, token, FINISHED, {"mediaKey": media_key, "previewKey": preview_key})
        return True

    async def _give_up_lease(self, doc: Document, token: str) -> None:
        try:
            await self.records.renderings.update_one(
                {"_id": doc["_id"], "state": FINISHING, "leaseToken": token},
                {"$set": {"leaseUntil": self.clock.now()}},
            )
        except Exception as error:
            log.warning("could not give up a finishing lease", error=str(error))

    async def _end(
        self,
        doc: Document,
        token: str,
        state: str,
        fields: dict[str, Any],
    ) -> None:
        now = self.clock.now()
        update = {
            "$set": {"state": state, "finishedAt": now, **fields},
            "$unset": {"leaseUntil": "", "leaseToken": ""},
        }
        matched = 0
        async for attempt in _retrying():
            with attempt:
                result = await self.records.renderings.update_one(
                    {"_id": doc["_id"], "state": FINISHING, "leaseToken": token}, update
                )
                matched = result.matched_count
        if matched == 0:
            log.warning("lost the finishing lease; another finisher owns it", rendering=doc["_id"])

    async def _composite(self, rendering: Rendering) -> tuple[str, str]:
        org, rid = rendering.organization_id, rendering.rendering_id
        root = self.renderings.work_dir(org, rid)
        local = next((d for d in root.glob("*") if (d / OVERLAY_FILE).exists()), None)
        work = local or (root / secrets.token_hex(4))
        work.mkdir(parents=True, exist_ok=True)
        overlay, source = work / OVERLAY_FILE, work / SOURCE_FILE
        if not overlay.exists():
            # Prepared by another replica (or before a restart): fetch what it stored.
            async for attempt in _retrying():
                with attempt:
                    await self.store.download(rendering.capture_key, overlay)
        if not source.exists():
            if not rendering.video_src:
                raise NotFound("the rendering has no video source")
            bounds = DurationBounds(**rendering.bounds)
            await self.renderer.check_video(rendering.video_src, bounds, source)
        output, preview = work / "media.mp4", work / "preview.jpg"
        started = time.perf_counter()
        async with self._composites:
            waited = time.perf_counter()
            await self.tools.composite(source, overlay, output, preview, COMPOSITE_TIMEOUT_SECONDS)
        composited = time.perf_counter()
        media_key = rendering_key(org, rid, ".mp4")
        preview_key = rendering_key(org, rid, ".jpg")
        async for attempt in _retrying():
            with attempt:
                await self.store.put_file(media_key, output, "video/mp4")
                await self.store.put_file(preview_key, preview, "image/jpeg")
        log.info(
            "video composited",
            rendering=f"{org}:{rid}",
            local=local is not None,
            queued_seconds=round(waited - started, 2),
            composite_seconds=round(composited - waited, 2),
            upload_seconds=round(time.perf_counter() - composited, 2),
        )
        return media_key, preview_key


def _retrying() -> AsyncRetrying:
    """Storage hiccups are retried a few times; domain errors are final at once."""
    return AsyncRetrying(
        stop=stop_after_attempt(4),
        wait=STORAGE,
        retry=retry_if_not_exception_type((DomainError, MediaToolError, asyncio.CancelledError)),
        reraise=True,
    )


def _failure_message(error: Exception) -> str:
    if isinstance(error, DomainError):
        return error.message
    if isinstance(error, MediaToolError):
        return f"the video could not be composited: {error}"
    return "rendering failed because of an internal error"
