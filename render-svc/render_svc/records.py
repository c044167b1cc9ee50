"""The collections render-svc owns and their indexes."""

from __future__ import annotations

from dataclasses import dataclass

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document, drop_indexes, ensure_indexes

# Renderings no longer carry events (nothing read them): their outbox index goes.
RETIRED_INDEXES = ("outbox_pending",)
RETIRED_QUOTA_INDEXES = ("org_slot", "org_taken")


@dataclass(frozen=True)
class RenderCollections:
    renderings: AsyncCollection[Document]
    temp_blobs: AsyncCollection[Document]
    drafts: AsyncCollection[Document]
    draft_versions: AsyncCollection[Document]
    draft_folders: AsyncCollection[Document]
    draft_quota: AsyncCollection[Document]

    @classmethod
    def of(cls, db: AsyncDatabase[Document]) -> RenderCollections:
        return cls(
            renderings=db["renderings"],
            temp_blobs=db["temp_blobs"],
            drafts=db["drafts"],
            draft_versions=db["draft_versions"],
            draft_folders=db["draft_folders"],
            draft_quota=db["draft_quota_slots"],
        )

    async def ensure_indexes(self) -> None:
        org_unique = [("organizationId", ASCENDING)]
        await ensure_indexes(
            self.renderings,
            [
                IndexModel([*org_unique, ("renderingId", ASCENDING)], unique=True, name="org_id"),
                # The resume loop: finishing renderings whose lease ran out.
                IndexModel([("state", ASCENDING), ("leaseUntil", ASCENDING)], name="state_lease"),
            ],
        )
        await drop_indexes(self.renderings, RETIRED_INDEXES)
        await ensure_indexes(
            self.temp_blobs,
            [
                IndexModel([*org_unique, ("tempBlobUuid", ASCENDING)], unique=True, name="org_id"),
                IndexModel([("expiresAt", ASCENDING)], name="expires"),
            ],
        )
        await ensure_indexes(
            self.drafts,
            [
                IndexModel([*org_unique, ("draftUuid", ASCENDING)], unique=True, name="org_id"),
                IndexModel(
                    [*org_unique, ("folderName", ASCENDING), ("createdAt", DESCENDING)],
                    name="org_folder_created",
                ),
            ],
        )
        await ensure_indexes(
            self.draft_versions,
            [
                IndexModel(
                    [*org_unique, ("draftUuid", ASCENDING), ("version", ASCENDING)],
                    unique=True,
                    name="org_draft_version",
                ),
                IndexModel(
                    [*org_unique, ("versionUuid", ASCENDING)], unique=True, name="org_version_uuid"
                ),
            ],
        )
        await ensure_indexes(
            self.draft_folders,
            [IndexModel([*org_unique, ("name", ASCENDING)], unique=True, name="org_name")],
        )
        # The draft quota is one document per organization, found by `_id`
        # (storypost_runtime.quota): the slot-per-document indexes go once migration step 1
        # has folded the old documents.
        await drop_indexes(self.draft_quota, RETIRED_QUOTA_INDEXES)
