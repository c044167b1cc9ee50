"""Drafts in the gallery: versions, each rendered like a post; status from the latest one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from dataclasses import KW_ONLY, dataclass
from datetime import datetime

from pymongo import DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from render_svc.blobs import normalize_uuid
from render_svc.finisher import Finisher
from render_svc.quota import DraftQuota
from render_svc.records import RenderCollections
from render_svc.renderer import DesignInput
from render_svc.renderings import FAILED, FINISHED, Rendering, Renderings
from render_svc.storage import MediaStore
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document

DEFAULT_NAME = "api-story"
USER_POSTED_MESSAGE = (
    "a user already scheduled or posted this draft; cancel the post in the app first"
)
USER_POST_NAMES: dict[int, str] = {
    pb.DRAFT_USER_POST_NONE: "none",
    pb.DRAFT_USER_POST_SCHEDULED: "scheduled",
    pb.DRAFT_USER_POST_POSTED: "posted",
}


def rendering_id_of(draft_uuid: str, version_uuid: str) -> str:
    return f"draft-{draft_uuid}-{version_uuid}"


@dataclass(frozen=True)
class DraftView:
    """A draft as of its latest saved version (what status-draft reports)."""

    organization_id: str
    draft_uuid: str
    name: str
    folder_name: str
    status: str
    version: int
    user_post: str
    created_at: datetime
    updated_at: datetime
    warnings: list[str]
    media_kind: str
    preview_url: str | None = None
    error_message: str | None = None

    @property
    def deleted(self) -> bool:
        return self.status == "deleted"


def _status(doc: Document, rendering: Rendering | None) -> str:
    if doc.get("deletedAt") is not None:
        return "deleted"
    if rendering is None:
        return "rendering"
    return {FINISHED: "ready", FAILED: "failed"}.get(rendering.state, "rendering")


@component
class Drafts:
    _: KW_ONLY
    records: RenderCollections
    renderings: Renderings
    finisher: Finisher
    store: MediaStore
    quota: DraftQuota
    clock: Clock

    async def _doc(self, org: str, uuid: str) -> Document | None:
        return await self.records.drafts.find_one({"organizationId": org, "draftUuid": uuid})

    async def _view(self, doc: Document, rendering: Rendering | None = None) -> DraftView:
        if rendering is None:
            rendering = await self.renderings.find(doc["organizationId"], doc["renderingId"])
        status = _status(doc, rendering)
        preview = None
        if status == "ready" and rendering is not None:
            preview = await self.renderings.preview_url(rendering)
        return DraftView(
            organization_id=doc["organizationId"],
            draft_uuid=doc["draftUuid"],
            name=doc["name"],
            folder_name=doc.get("folderName") or "",
            status=status,
            version=int(doc["version"]),
            user_post=doc.get("userPost", "none"),
            created_at=doc["createdAt"],
            updated_at=doc.get("updatedAt") or doc["createdAt"],
            warnings=list(rendering.warnings) if rendering else [],
            media_kind=rendering.media_kind if rendering else "",
            preview_url=preview,
            error_message=rendering.error_message if rendering and status == "failed" else None,
        )

    async def get(self, org: str, uuid: str) -> DraftView:
        uuid = normalize_uuid(uuid, "draftUuid")
        doc = await self._doc(org, uuid)
        if doc is None:
            raise NotFound(f"draft {uuid} not found")
        return await self._view(doc)

    async def create(
        self, org: str, uuid: str, design: DesignInput, name: str, folder: str
    ) -> DraftView:
        """Renders version 1 and stores the draft; a repeat returns the draft as it stands."""
        uuid = normalize_uuid(uuid, "draftUuid")
        name = name or DEFAULT_NAME
        if not 1 <= len(name) <= 200:
            raise InvalidArgument("name must be 1 to 200 characters")
        if len(folder) > 512:
            raise InvalidArgument("folderName must be 1 to 512 characters")
        existing = await self._doc(org, uuid)
        if existing is not None:
            return await self._view(existing)
        slot = await self.quota.reserve(org, uuid)
        try:
            rendering_id = rendering_id_of(uuid, uuid)
            rendering = await self.renderings.prepare(org, rendering_id, design, pb.PURPOSE_DRAFT)
            design_key = await self._save_design(org, uuid, design)
            now = self.clock.now()
            doc: Document = {
                "_id": f"{org}:{uuid}",
                "organizationId": org,
                "draftUuid": uuid,
                "name": name,
                # "" is the top level of the gallery: a plain value every query can match.
                "folderName": folder,
                "createdAt": now,
                "updatedAt": now,
                "version": 1,
                "versionUuid": uuid,
                "renderingId": rendering_id,
                "designKey": design_key,
                "userPost": "none",
                "deletedAt": None,
            }
            try:
                await self.records.drafts.insert_one(doc)
            except DuplicateKeyError:
                # The same create raced us and won: one draft, one slot.
                await asyncio.shield(self.quota.release(slot))
                return await self.get(org, uuid)
        except BaseException:
            await asyncio.shield(self.quota.release(slot))
            raise
        await self._record_version(doc, rendering_id, design_key)
        if folder:
            await self.records.draft_folders.update_one(
                {"_id": f"{org}:{folder}"},
                {"$setOnInsert": {"organizationId": org, "name": folder, "createdAt": now}},
                upsert=True,
            )
        await self.finisher.finish(org, rendering_id)
        return await self._view(doc, await self.renderings.find(org, rendering_id) or rendering)

    async def _save_design(self, org: str, uuid: str, design: DesignInput) -> str:
        key = f"drafts/{org}/{uuid}/{secrets.token_hex(8)}.json"
        body = json.dumps({"html": design.html} if design.html is not None else {"url": design.url})
        await self.store.put(key, body.encode(), "application/json")
        return key

    async def _record_version(self, doc: Document, rendering_id: str, design_key: str) -> None:
        with contextlib.suppress(DuplicateKeyError):
            await self.records.draft_versions.insert_one(
                {
                    "organizationId": doc["organizationId"],
                    "draftUuid": doc["draftUuid"],
                    "version": doc["version"],
                    "versionUuid": doc["versionUuid"],
                    "renderingId": rendering_id,
                    "designKey": design_key,
                    "createdAt": doc["updatedAt"],
                }
            )

    async def save_version(
        self, org: str, uuid: str, version_uuid: str, design: DesignInput
    ) -> DraftView:
        """A new version from the editor: rendered now, reported by status-draft from then on."""
        uuid = normalize_uuid(uuid, "draftUuid")
        version_uuid = normalize_uuid(version_uuid, "versionUuid")
        doc = await self._doc(org, uuid)
        if doc is None:
            raise NotFound(f"draft {uuid} not found")
        if doc.get("deletedAt") is not None:
            raise FailedPrecondition("the draft is deleted")
        known = await self.records.draft_versions.find_one(
            {"organizationId": org, "versionUuid": version_uuid}
        )
        if known is not None:
            return await self._view(doc)
        rendering_id = rendering_id_of(uuid, version_uuid)
        await self.renderings.prepare(org, rendering_id, design, pb.PURPOSE_DRAFT)
        design_key = await self._save_design(org, uuid, design)
        for _ in range(5):
            version = int(doc["version"]) + 1
            now = self.clock.now()
            updated = await self.records.drafts.find_one_and_update(
                {"_id": doc["_id"], "version": doc["version"], "deletedAt": None},
                {
                    "$set": {
                        "version": version,
                        "versionUuid": version_uuid,
                        "renderingId": rendering_id,
                        "designKey": design_key,
                        "updatedAt": now,
                    }
                },
                return_document=ReturnDocument.AFTER,
            )
            if updated is not None:
                await self._record_version(updated, rendering_id, design_key)
                await self.finisher.finish(org, rendering_id)
                return await self._view(updated)
            # Another save (or a delete) came first: read it again.
            doc = await self._doc(org, uuid) or doc
            if doc.get("deletedAt") is not None:
                raise FailedPrecondition("the draft is deleted")
        raise FailedPrecondition("the draft is being saved by someone else; retry")

    async def delete(self, org: str, uuid: str, *, by_user: bool = False) -> DraftView:
        """Marks the draft deleted (idempotent); refused while a user's post uses it."""
        uuid = normalize_uuid(uuid, "draftUuid")
        guard: Document = {"organizationId": org, "draftUuid": uuid, "deletedAt": None}
        if not by_user:
            guard["userPost"] = "none"
        deleted = await self.records.drafts.find_one_and_update(
            guard,
            {"$set": {"deletedAt": self.clock.now()}},
            return_document=ReturnDocument.AFTER,
        )
        if deleted is not None:
            return await self._view(deleted)
        doc = await self._doc(org, uuid)
        if doc is None:
            raise NotFound(f"draft {uuid} not found")
        if doc.get("deletedAt") is not None:
            return await self._view(doc)
        raise FailedPrecondition(USER_POSTED_MESSAGE, reason="DRAFT_IN_USE")

    async def set_user_post(self, org: str, uuid: str, user_post: int) -> DraftView:
        uuid = normalize_uuid(uuid, "draftUuid")
        if user_post not in USER_POST_NAMES:
            raise InvalidArgument("user_post must be NONE, SCHEDULED or POSTED")
        updated = await self.records.drafts.find_one_and_update(
            {"organizationId": org, "draftUuid": uuid, "deletedAt": None},
            {"$set": {"userPost": USER_POST_NAMES[user_post]}},
            return_document=ReturnDocument.AFTER,
        )
        if updated is not None:
            return await self._view(updated)
        if await self._doc(org, uuid) is None:
            raise NotFound(f"draft {uuid} not found")
        raise FailedPrecondition("the draft is deleted")

    async def list_drafts(
        self,
        org: str,
        folder: str,
        *,
        include_deleted: bool = False,
        limit: int = 50,
        created_before: datetime | None = None,
    ) -> list[DraftView]:
        query: Document = {"organizationId": org, "folderName": folder}
        if not include_deleted:
            query["deletedAt"] = None
        if created_before is not None:
            query["createdAt"] = {"$lt": created_before}
        limit = limit or 50
        if not 1 <= limit <= 200:
            raise InvalidArgument("limit must be 1 to 200")
        docs = await self.records.drafts.find(query).sort("createdAt", DESCENDING).to_list(limit)
        renderings = await self.renderings.find_many(org, [d["renderingId"] for d in docs])
        return [await self._view(d, renderings.get(d["renderingId"])) for d in docs]

    async def folders(self, org: str) -> list[str]:
        docs = await self.records.draft_folders.find({"organizationId": org}).to_list(10_000)
        return sorted(doc["name"] for doc in docs)

    async def design(self, org: str, uuid: str) -> DesignInput:
        uuid = normalize_uuid(uuid, "draftUuid")
        doc = await self._doc(org, uuid)
        if doc is None:
            raise NotFound(f"draft {uuid} not found")
        stored = json.loads(await self.store.get(doc["designKey"]))
        return DesignInput(html=stored.get("html"), url=stored.get("url"))
