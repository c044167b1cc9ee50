"""Temp blobs: presigned or inline uploads, signed downloads (the stable URL's redirect
target, served by the edge), expiry."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from cachetools import LRUCache
from pymongo.errors import DuplicateKeyError

from render_svc.blob_urls import BlobRef, blob_url, new_key
from render_svc.netguard import TooLarge
from render_svc.records import RenderCollections
from render_svc.sniff import HEAD_BYTES, mismatch, served_as
from render_svc.storage import MediaStore
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import InvalidArgument, NotFound
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import run_passes

log = get_logger(__name__)

CONTENT_TYPE = re.compile(r"^(image|video|audio)/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_PRESIGNED_BYTES = 104_857_600
# 41,943,040 base64 characters decode to at most this many bytes (30 MiB).
MAX_INLINE_BYTES = 31_457_280
OBJECT_PREFIX = "temp-blobs/"
RECORD_CACHE_SIZE = 10_000
NOT_FOUND = "temp blob not found (unknown, expired or never uploaded)"
DOWNLOAD_EXPIRED = "the download link is wrong or has expired: GET the blob's url again"
# The most bytes one ReadTempBlob answer carries (the edge asks part after part).
READ_PART_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class BlobPart:
    """What a download answers: its headers' values and the bytes asked for."""

    content_type: str
    disposition: str
    total_length: int
    data: bytes


def download_signature(key: str, org: str, uuid: str, expires_at: int) -> str:
    """Names a download for a while without revealing the blob's key (whose holders may make
    downloads anyway: the stable URL is the permission)."""
    message = f"{org}:{uuid}:{expires_at}".encode()
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def normalize_uuid(value: str, name: str) -> str:
    """Canonical lower-case form; `ABC…` and `abc…` name one resource."""
    lowered = value.strip().lower()
    if not UUID.match(lowered):
        raise InvalidArgument(
            f"{name} must be a UUID", field_violations={name: ["not a valid uuid"]}
        )
    return lowered


def check_content_type(content_type: str) -> None:
    if not CONTENT_TYPE.match(content_type):
        raise InvalidArgument(
            "contentType must be an image/*, video/* or audio/* media type, e.g. 'video/mp4'",
            field_violations={
                "contentType": [
                    "must be an image/*, video/* or audio/* media type, e.g. 'video/mp4'"
                ]
            },
        )


def check_presigned(content_type: str, length: int) -> None:
    check_content_type(content_type)
    if not 1 <= length <= MAX_PRESIGNED_BYTES:
        raise InvalidArgument(
            f"contentLengthBytes must be 1 to {MAX_PRESIGNED_BYTES}",
            field_violations={"contentLengthBytes": [f"must be 1 to {MAX_PRESIGNED_BYTES}"]},
        )


def check_inline(content_type: str, content: bytes) -> None:
    check_content_type(content_type)
    if not 1 <= len(content) <= MAX_INLINE_BYTES:
        raise InvalidArgument(
            f"the decoded content must be 1 to {MAX_INLINE_BYTES} bytes (30 MB)",
            field_violations={"contentBase64": ["must decode to 1 byte to 30 MB"]},
        )
    wrong = mismatch(content_type, content[:HEAD_BYTES])
    if wrong is not None:
        raise InvalidArgument(
            f"contentBase64 does not match contentType: {wrong}",
            field_violations={"contentBase64": [wrong]},
        )


class Refused(TooLarge):
    """A blob whose bytes are not its declared type. A TooLarge too: a page's network
    layer then reports it as `<url> was not loaded: <reason>` and loads nothing."""


@dataclass(frozen=True)
class BlobSettings:
    upload_seconds: int = 900
    download_seconds: int = 300
    ttl_seconds: float = 86400.0


@dataclass(frozen=True)
class TempBlob:
    organization_id: str
    temp_blob_uuid: str
    key: str
    content_type: str
    content_length: int
    object_key: str
    created_at: datetime
    expires_at: datetime
    uploaded: bool
    # The presigned PUT handed out when the blob was created, and when it stops working: a
    # repeat of the call within that time answers the same URL (see create_upload_url).
    upload_url: str = ""
    upload_until: datetime | None = None
    # Why the bytes of a presigned upload were refused when first seen ("": they were not).
    refused: str = ""

    @classmethod
    def from_doc(cls, doc: Document) -> TempBlob:
        return from_document(
            cls,
            doc,
            content_length=int(doc["contentLength"]),
            uploaded=bool(doc.get("uploaded")),
            upload_url=str(doc.get("uploadUrl") or ""),
            refused=str(doc.get("refused") or ""),
        )

    def url(self, public_app_url: str) -> str:
        return blob_url(public_app_url, self.temp_blob_uuid, self.key)


@component
class BlobCache:
    """Blobs are immutable: their bytes can be kept in memory (LRU, bounded in bytes)."""

    max_bytes: int
    _items: LRUCache[str, tuple[str, bytes]] = field(init=False)

    def __post_init__(self) -> None:
        self._items = LRUCache(maxsize=self.max_bytes, getsizeof=lambda item: len(item[1]))

    def get(self, key: str) -> tuple[str, bytes] | None:
        return self._items.get(key)

    def put(self, key: str, content_type: str, body: bytes) -> None:
        if len(body) > self.max_bytes // 4 or key in self._items:
            return
        self._items[key] = (content_type, body)


@component
class TempBlobs:
    _: KW_ONLY
    records: RenderCollections
    store: MediaStore
    clock: Clock
    settings: BlobSettings
    cache: BlobCache
    _uploaded: LRUCache[str, TempBlob] = field(
        init=False, default_factory=lambda: LRUCache(maxsize=RECORD_CACHE_SIZE)
    )

    def _new_doc(
        self, org: str, uuid: str, content_type: str, length: int, *, uploaded: bool
    ) -> Document:
        now = self.clock.now()
        return {
            "_id": f"{org}:{uuid}",
            "organizationId": org,
            "tempBlobUuid": uuid,
            # The secret part of the stable URL.
            "key": new_key(),
            "contentType": content_type,
            "contentLength": length,
            # A fresh object name per attempt: a racing duplicate never overwrites the winner.
            "objectKey": f"{OBJECT_PREFIX}{org}/{uuid}/{secrets.token_hex(8)}",
            "createdAt": now,
            "expiresAt": now + timedelta(seconds=self.settings.ttl_seconds),
            "uploaded": uploaded,
        }

    async def _find(self, org: str, uuid: str) -> TempBlob | None:
        doc = await self.records.temp_blobs.find_one({"organizationId": org, "tempBlobUuid": uuid})
        return TempBlob.from_doc(doc) if doc else None

    async def create_upload_url(
        self, org: str, uuid: str, content_type: str, length: int
    ) -> tuple[TempBlob, str | None]:
        """A new blob and its presigned PUT. A repeat (a retry whose answer was lost, or a
        racing twin) gives the same blob and, until the bytes arrive and while it is valid,
        the same PUT URL; once the blob has its bytes there is no URL."""
        uuid = normalize_uuid(uuid, "tempBlobUuid")
        existing = await self._repeat_if_invalid(
            org, uuid, lambda: check_presigned(content_type, length)
        )
        if existing is not None:
            return existing, await self._pending_upload_url(existing)
        doc = self._new_doc(org, uuid, content_type, length, uploaded=False)
        # Signed before the insert and stored with the record, so every repeat answers the
        # very same URL (it grants no more than the first answer did: a PUT of this type and
        # length to this one object until it expires).
        url = await self.store.presign_put(
            doc["objectKey"], content_type, length, self.settings.upload_seconds
        )
        doc["uploadUrl"] = url
        doc["uploadUntil"] = doc["createdAt"] + timedelta(seconds=self.settings.upload_seconds)
        try:
            await self.records.temp_blobs.insert_one(doc)
        except DuplicateKeyError:
            found = await self._find(org, uuid)
            if found is None:
                raise
            return found, await self._pending_upload_url(found)
        return TempBlob.from_doc(doc), url

    async def _repeat_if_invalid(
        self, org: str, uuid: str, check: Callable[[], None]
    ) -> TempBlob | None:
        """None when the request is valid: a new blob is then inserted, and a repeat learns
        of its twin from the duplicate key (one round trip for the usual call). An invalid
        request is a repeat when the blob exists: it gets that blob, whatever it says now."""
        try:
            check()
        except InvalidArgument:
            existing = await self._find(org, uuid)
            if existing is None:
                raise
            return existing
        return None

    async def _pending_upload_url(self, blob: TempBlob) -> str | None:
        """The stored PUT URL of a blob still waiting for its bytes, else None."""
        if blob.uploaded or not blob.upload_url or blob.upload_until is None:
            return None
        if blob.upload_until <= self.clock.now():
            return None
        if await self.store.head(blob.object_key) is not None:
            return None
        return blob.upload_url

    async def upload_inline(
        self, org: str, uuid: str, content: bytes, content_type: str
    ) -> TempBlob:
        """Stores the bytes; an existing UUID keeps its content and the upload is ignored."""
        uuid = normalize_uuid(uuid, "tempBlobUuid")
        existing = await self._repeat_if_invalid(
            org, uuid, lambda: check_inline(content_type, content)
        )
        if existing is not None:
            return existing
        doc = self._new_doc(org, uuid, content_type, len(content), uploaded=True)
        await self.store.put(doc["objectKey"], content, content_type)
        try:
            await self.records.temp_blobs.insert_one(doc)
        except DuplicateKeyError:
            # A concurrent identical call won: keep its object, drop ours.
            await self.store.delete(doc["objectKey"])
            found = await self._find(org, uuid)
            if found is None:
                raise
            return found
        return TempBlob.from_doc(doc)

    async def _record(self, org: str, uuid: str) -> TempBlob | None:
        """The blob's record: from memory once its bytes were seen, else from the database."""
        if not UUID.match(uuid):
            return None
        return self._uploaded.get(f"{org}:{uuid}") or await self._find(org, uuid)

    async def _usable(self, org: str, uuid: str, key: str) -> TempBlob | None:
        """The blob when the key matches, it has not expired and its bytes are there."""
        blob = await self._record(org, uuid)
        if blob is None or not hmac.compare_digest(blob.key.encode(), key.encode()):
            return None
        return await self._ready(blob)

    async def _ready(self, blob: TempBlob) -> TempBlob | None:
        """The blob when it has not expired and its bytes are there (checked against its
        declared type the first time); Refused when they were not that type."""
        org, uuid = blob.organization_id, blob.temp_blob_uuid
        if blob.expires_at <= self.clock.now():
            return None
        if not blob.uploaded:
            info = await self.store.head(blob.object_key)
            if info is None:
                return None
            # The presigned PUT happened: its bytes are checked against the declared type
            # once, and the verdict kept, so later reads skip both.
            head = await self.store.get_head(blob.object_key, HEAD_BYTES)
            refused = mismatch(blob.content_type, head) or ""
            await self.records.temp_blobs.update_one(
                {"_id": f"{org}:{uuid}"}, {"$set": {"uploaded": True, "refused": refused}}
            )
            if refused:
                log.info("temp blob refused", blob=f"{org}:{uuid}", reason=refused)
                # Nothing of it is ever served: the bytes go, the record keeps the reason.
                await self.store.delete(blob.object_key)
            blob = dataclasses.replace(blob, uploaded=True, refused=refused)
        self._remember(blob)
        if blob.refused:
            raise Refused(f"temp blob {blob.temp_blob_uuid} was refused: {blob.refused}")
        return blob

    def _remember(self, blob: TempBlob) -> None:
        """An uploaded blob's record never changes (its expiry is checked on every use), so
        pages that use it again skip the database."""
        name = f"{blob.organization_id}:{blob.temp_blob_uuid}"
        self._uploaded[name] = blob

    async def sign_download(self, org: str, uuid: str, key: str) -> tuple[int, str]:
        """The expiry and signature of a short-lived download of the blob."""
        blob = await self._usable_or_refused(org, uuid.lower(), key)
        expires_at = int(self.clock.now().timestamp()) + self.settings.download_seconds
        return expires_at, download_signature(blob.key, org, blob.temp_blob_uuid, expires_at)

    async def read(
        self, org: str, uuid: str, expires_at: int, signature: str, offset: int, length: int
    ) -> BlobPart:
        """Part of a signed download. The edge serves it with `X-Content-Type-Options:
        nosniff`: a verified type inline as itself, anything else (SVG…) as an attachment of a
        neutral type, whatever the object was stored as."""
        uuid = uuid.lower()
        signed = await self._record(org, uuid)
        if (
            signed is None
            or expires_at < self.clock.now().timestamp()
            or not hmac.compare_digest(
                download_signature(signed.key, org, uuid, expires_at).encode(), signature.encode()
            )
        ):
            raise NotFound(DOWNLOAD_EXPIRED)
        blob = await self._refused_or_found(self._ready(signed))
        content_type, disposition = served_as(blob.content_type)
        if disposition == "attachment":
            disposition = f'attachment; filename="{blob.temp_blob_uuid}"'
        if offset < 0 or length < 0:
            raise InvalidArgument("offset and length must not be negative")
        length = min(length, READ_PART_BYTES, max(0, blob.content_length - offset))
        data = await self.store.get_range(blob.object_key, offset, length) if length else b""
        if offset == 0 and data:
            # Checked again on the bytes served: within its upload window a presigned blob's
            # object may have been PUT a second time.
            wrong = mismatch(blob.content_type, data[:HEAD_BYTES])
            if wrong is not None:
                raise InvalidArgument(f"temp blob {blob.temp_blob_uuid} was refused: {wrong}")
        return BlobPart(content_type, disposition, blob.content_length, data)

    async def _usable_or_refused(self, org: str, uuid: str, key: str) -> TempBlob:
        return await self._refused_or_found(self._usable(org, uuid, key))

    @staticmethod
    async def _refused_or_found(check: Awaitable[TempBlob | None]) -> TempBlob:
        """A usable blob, or the caller's error: INVALID_ARGUMENT for refused bytes,
        NOT_FOUND for anything else."""
        try:
            blob = await check
        except Refused as error:
            raise InvalidArgument(str(error)) from None
        if blob is None:
            raise NotFound(NOT_FOUND)
        return blob

    async def read_for_page(self, ref: BlobRef, max_bytes: int) -> tuple[str, bytes] | None:
        """The bytes of one of our blob URLs met in a page (None: not found)."""
        blob = await self._usable(ref.organization_id, ref.temp_blob_uuid, ref.key)
        if blob is None:
            return None
        cached = self.cache.get(blob.object_key)
        if cached is not None:
            return cached
        if blob.content_length > max_bytes:
            raise TooLarge(f"{blob.content_length} bytes is over the limit of {max_bytes}")
        body = await self.store.get(blob.object_key)
        if len(body) > max_bytes:
            raise TooLarge(f"{len(body)} bytes is over the limit of {max_bytes}")
        # Checked again on the bytes in hand: within its upload window a presigned blob's
        # object may have been PUT a second time.
        wrong = mismatch(blob.content_type, body[:HEAD_BYTES])
        if wrong is not None:
            raise Refused(f"temp blob {blob.temp_blob_uuid} was refused: {wrong}")
        self.cache.put(blob.object_key, blob.content_type, body)
        return blob.content_type, body

    async def download_to(self, ref: BlobRef, path: Path) -> bool:
        """Copies a blob (a video source) to a local file; False when it is not usable.
        Refused when its bytes are not its declared type."""
        blob = await self._usable(ref.organization_id, ref.temp_blob_uuid, ref.key)
        if blob is None:
            return False
        await self.store.download(blob.object_key, path)
        return True

    async def sweep(self, batch: int = 200) -> int:
        """Deletes expired blobs: objects first, then their records. Returns how many."""
        now = self.clock.now()
        docs = await self.records.temp_blobs.find(
            {"expiresAt": {"$lte": now}}, {"objectKey": 1}
        ).to_list(batch)
        if not docs:
            return 0
        await self.store.delete(*(doc["objectKey"] for doc in docs))
        result = await self.records.temp_blobs.delete_many(
            {"_id": {"$in": [doc["_id"] for doc in docs]}, "expiresAt": {"$lte": now}}
        )
        return int(result.deleted_count)


async def sweep_forever(blobs: TempBlobs, interval_seconds: float) -> None:
    """The sweeper loop: deletes expired blobs every interval (errors are logged, retried)."""
    await run_passes(
        blobs.sweep,
        lambda error: log.warning("temp blob sweep failed", error=str(error)),
        poll_seconds=interval_seconds,
    )
