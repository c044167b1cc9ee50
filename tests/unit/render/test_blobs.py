"""Temp blobs: idempotent creates, the redirect target's rules, the sweeper, the cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from render_svc.blob_urls import BlobRef
from render_svc.blobs import BlobCache, BlobPart, BlobSettings, Refused, TempBlobs
from render_svc.netguard import TooLarge
from render_svc.records import RenderCollections
from render_svc.storage import ObjectInfo
from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import InvalidArgument, NotFound
from storypost_runtime.mongo import Document

UUID = "6B81ABC4-0825-4B6C-8C9C-A33D9D55D93E"
# The first bytes of a PNG and of an MP4: enough for the magic-number check.
PNG = b"\x89PNG\r\n\x1a\n"
MP4 = b"\x00\x00\x00\x18ftypisom"
SVG = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"
HLS = b"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n"


class FakeStore:
    """The MediaStore calls TempBlobs makes, in memory."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[str, bytes]] = {}
        self.gets = 0

    async def put(self, key: str, body: bytes, content_type: str) -> None:
        self.objects[key] = (content_type, body)

    async def get(self, key: str) -> bytes:
        self.gets += 1
        return self.objects[key][1]

    async def head(self, key: str) -> ObjectInfo | None:
        found = self.objects.get(key)
        return ObjectInfo(len(found[1]), found[0]) if found else None

    async def delete(self, *keys: str) -> None:
        for key in keys:
            self.objects.pop(key, None)

    async def download(self, key: str, path: Path) -> None:
        path.write_bytes(self.objects[key][1])

    async def presign_put(self, key: str, content_type: str, length: int, seconds: int) -> str:
        return f"https://s3.test/{key}?put&type={content_type}&length={length}&expires={seconds}"

    async def get_head(self, key: str, length: int) -> bytes:
        return await self.get_range(key, 0, length)

    async def get_range(self, key: str, offset: int, length: int) -> bytes:
        self.gets += 1
        return self.objects[key][1][offset : offset + length]


async def download(blobs: TempBlobs, org: str, uuid: str, key: str) -> BlobPart:
    """What a download of the blob answers, as the edge asks for it (first 4 MiB)."""
    expires_at, signature = await blobs.sign_download(org, uuid, key)
    return await blobs.read(org, uuid, expires_at, signature, 0, 4 << 20)


@pytest.fixture
async def setup(
    db: AsyncDatabase[Document],
) -> tuple[TempBlobs, FakeStore, FrozenClock, RenderCollections]:
    records = RenderCollections.of(db)
    await records.ensure_indexes()
    store = FakeStore()
    clock = FrozenClock(datetime(2026, 7, 1, 9, 0, tzinfo=UTC))
    blobs = TempBlobs(
        records=records,
        store=store,  # type: ignore[arg-type]
        clock=clock,
        settings=BlobSettings(900, 300, 86400),
        cache=BlobCache(1 << 20),
    )
    return blobs, store, clock, records


Setup = tuple[TempBlobs, FakeStore, FrozenClock, RenderCollections]


async def test_create_upload_url_is_idempotent_and_presigns_exact_headers(setup: Setup) -> None:
    blobs, store, _clock, _records = setup
    blob, upload = await blobs.create_upload_url("org", UUID, "video/mp4", 1234)
    assert blob.temp_blob_uuid == UUID.lower()
    assert upload is not None and "type=video/mp4&length=1234&expires=900" in upload
    # A repeat before the bytes arrived (a retry whose answer was lost) gets the same URL.
    again, same_upload = await blobs.create_upload_url("org", UUID.lower(), "image/png", 1)
    assert same_upload == upload
    assert again.key == blob.key and again.content_type == "video/mp4"
    assert again.url("http://edge/o/org") == blob.url("http://edge/o/org")
    # Even a repeat that would be refused as a new call gets the blob it created.
    invalid_again, invalid_upload = await blobs.create_upload_url("org", UUID, "text/html", 0)
    assert (invalid_again.key, invalid_upload) == (blob.key, upload)
    # Not uploaded yet: the stable URL has nothing to redirect to.
    with pytest.raises(NotFound):
        await blobs.sign_download("org", UUID, blob.key)
    body = MP4 + b"x" * (1234 - len(MP4))
    await store.put(blob.object_key, body, "video/mp4")
    assert (await download(blobs, "org", UUID, blob.key)).data == body
    # Once the blob has its bytes a repeat carries no upload URL.
    _, no_upload = await blobs.create_upload_url("org", UUID, "video/mp4", 1234)
    assert no_upload is None


async def test_a_repeat_after_the_upload_window_has_no_upload_url(setup: Setup) -> None:
    blobs, _store, clock, _records = setup
    _, upload = await blobs.create_upload_url("org", UUID, "video/mp4", 1234)
    assert upload is not None
    clock.advance(timedelta(seconds=899))
    assert (await blobs.create_upload_url("org", UUID, "video/mp4", 1234))[1] == upload
    clock.advance(timedelta(seconds=1))
    assert (await blobs.create_upload_url("org", UUID, "video/mp4", 1234))[1] is None


@pytest.mark.parametrize(
    ("content_type", "length"),
    [("text/html", 10), ("image/png; charset=x", 10), ("image/png", 0), ("video/mp4", 104_857_601)],
)
async def test_create_upload_url_refuses_bad_input(
    setup: Setup, content_type: str, length: int
) -> None:
    blobs = setup[0]
    with pytest.raises(InvalidArgument):
        await blobs.create_upload_url("org", UUID, content_type, length)


async def test_inline_uploads_keep_the_first_content(setup: Setup) -> None:
    blobs, store, _clock, _records = setup
    first = await blobs.upload_inline("org", UUID, PNG + b"first", "image/png")
    second = await blobs.upload_inline("org", UUID, b"\xff\xd8\xffsecond", "image/jpeg")
    assert second.key == first.key and second.content_type == "image/png"
    assert store.objects[first.object_key] == ("image/png", PNG + b"first")
    assert len(store.objects) == 1
    empty_repeat = await blobs.upload_inline("org", UUID, b"", "text/html")
    assert empty_repeat.key == first.key
    with pytest.raises(InvalidArgument):
        await blobs.upload_inline("org", "00000000-0000-4000-8000-000000000000", b"", "image/png")


async def test_only_the_right_key_of_the_right_organization_reads_a_blob(setup: Setup) -> None:
    blobs, store, _clock, _records = setup
    blob = await blobs.upload_inline("org", UUID, PNG + b"bytes", "image/png")
    with pytest.raises(NotFound):
        await blobs.sign_download("org", UUID, blob.key[:-1] + "x")
    with pytest.raises(NotFound):
        await blobs.sign_download("other-org", UUID, blob.key)
    ref = BlobRef("org", UUID.lower(), blob.key)
    assert await blobs.read_for_page(ref, 100) == ("image/png", PNG + b"bytes")
    assert await blobs.read_for_page(ref, 100) == ("image/png", PNG + b"bytes")
    assert store.gets == 1, "blobs are immutable: the second read comes from the cache"
    assert (
        await blobs.read_for_page(BlobRef("org", UUID.lower(), "wrong-key-wrong-key"), 100) is None
    )
    big = await blobs.upload_inline(
        "org", "00000000-0000-4000-8000-000000000001", PNG + b"1" * 50, "image/png"
    )
    with pytest.raises(TooLarge):
        await blobs.read_for_page(BlobRef("org", big.temp_blob_uuid, big.key), 10)


async def test_the_sweeper_deletes_expired_blobs_and_their_records(setup: Setup) -> None:
    blobs, store, clock, records = setup
    old = await blobs.upload_inline("org", UUID, PNG + b"old", "image/png")
    pending, _url = await blobs.create_upload_url(
        "org", "00000000-0000-4000-8000-000000000002", "image/png", 11
    )
    await store.put(pending.object_key, PNG + b"abc", "image/png")
    clock.advance(timedelta(hours=12))
    young = await blobs.upload_inline(
        "org", "00000000-0000-4000-8000-000000000003", PNG + b"young", "image/png"
    )
    assert await blobs.sweep() == 0
    clock.advance(timedelta(hours=12))
    # 24 hours after the first two were made: they go, objects first.
    assert await blobs.sweep() == 2
    assert set(store.objects) == {young.object_key}
    assert await records.temp_blobs.count_documents({}) == 1
    with pytest.raises(NotFound):
        await blobs.sign_download("org", UUID, old.key)
    # An expired record not yet swept is not served either.
    clock.advance(timedelta(hours=13))
    with pytest.raises(NotFound):
        await blobs.sign_download("org", young.temp_blob_uuid, young.key)
    assert await blobs.sweep() == 1
    assert store.objects == {}


def test_the_cache_is_bounded_in_bytes() -> None:
    cache = BlobCache(400)
    cache.put("a", "t", b"1" * 100)
    cache.put("b", "t", b"2" * 100)
    cache.put("huge", "t", b"3" * 101)  # over a quarter of the cache: never kept
    assert cache.get("huge") is None
    cache.get("a")
    cache.put("c", "t", b"4" * 100)
    cache.put("d", "t", b"5" * 100)
    cache.put("e", "t", b"6" * 100)
    assert cache.get("b") is None, "the least recently used entry went first"
    assert cache.get("a") is not None and cache.get("e") is not None


async def test_inline_bytes_must_be_the_declared_type(setup: Setup) -> None:
    blobs, store, _clock, records = setup
    for body, declared in ((HLS, "video/mp4"), (SVG, "image/png"), (PNG, "image/jpeg")):
        with pytest.raises(InvalidArgument) as refused:
            await blobs.upload_inline("org", UUID, body, declared)
        assert f"not {declared}: its bytes" in refused.value.field_violations["contentBase64"][0]
    # Nothing was stored: no object, no record, and the UUID is still free.
    assert store.objects == {}
    assert await records.temp_blobs.count_documents({}) == 0
    assert (await blobs.upload_inline("org", UUID, MP4, "video/mp4")).content_type == "video/mp4"


async def test_a_presigned_upload_of_other_bytes_is_refused_when_first_used(
    setup: Setup, tmp_path: Path
) -> None:
    blobs, store, _clock, records = setup
    blob, _upload = await blobs.create_upload_url("org", UUID, "video/mp4", len(HLS))
    await store.put(blob.object_key, HLS, "video/mp4")
    with pytest.raises(InvalidArgument, match="not video/mp4: its bytes are an HLS"):
        await blobs.sign_download("org", UUID, blob.key)
    # The bytes are gone, the verdict stays: every later use is refused the same way.
    assert store.objects == {}
    doc = await records.temp_blobs.find_one({})
    assert doc is not None and "HLS playlist" in doc["refused"]
    ref = BlobRef("org", UUID.lower(), blob.key)
    with pytest.raises(Refused, match="was refused"):
        await blobs.download_to(ref, tmp_path / "source")
    with pytest.raises(Refused, match="was refused"):
        await blobs.read_for_page(ref, 1000)


async def test_downloads_serve_only_verified_types_inline(setup: Setup) -> None:
    blobs, _store, _clock, _records = setup
    png = await blobs.upload_inline("org", UUID, PNG, "image/png")
    inline = await download(blobs, "org", UUID, png.key)
    assert (inline.content_type, inline.disposition, inline.data) == ("image/png", "inline", PNG)
    # The spec accepts any image/*: SVG is stored, but only ever served as an attachment of
    # a neutral type, so a script in it never runs from our origin.
    svg = await blobs.upload_inline(
        "org", "00000000-0000-4000-8000-000000000004", SVG, "image/svg+xml"
    )
    attachment = await download(blobs, "org", svg.temp_blob_uuid, svg.key)
    assert attachment.content_type == "application/octet-stream"
    assert attachment.disposition == f'attachment; filename="{svg.temp_blob_uuid}"'
    assert attachment.data == SVG


async def test_a_download_is_named_by_a_signature_that_expires(setup: Setup) -> None:
    blobs, _store, clock, _records = setup
    body = PNG + bytes(range(256)) * 40
    blob = await blobs.upload_inline("org", UUID, body, "image/png")
    expires_at, signature = await blobs.sign_download("org", UUID, blob.key)
    assert expires_at == int(clock.now().timestamp()) + 300
    assert blob.key not in signature
    # Parts, as a range asks for them; the length stops at the blob's end.
    part = await blobs.read("org", UUID, expires_at, signature, 100, 50)
    assert (part.data, part.total_length) == (body[100:150], len(body))
    assert (await blobs.read("org", UUID, expires_at, signature, len(body) - 5, 50)).data == (
        body[-5:]
    )
    assert (await blobs.read("org", UUID, expires_at, signature, 0, 0)).data == b""
    for wrong in (
        (UUID, expires_at + 1, signature),  # a later expiry than the one signed
        (UUID, expires_at, signature[:-1] + ("0" if signature[-1] != "0" else "1")),
        ("00000000-0000-4000-8000-000000000009", expires_at, signature),
    ):
        with pytest.raises(NotFound, match="wrong or has expired"):
            await blobs.read("org", wrong[0], wrong[1], wrong[2], 0, 10)
    with pytest.raises(NotFound):
        await blobs.read("other-org", UUID, expires_at, signature, 0, 10)
    clock.advance(timedelta(seconds=301))
    with pytest.raises(NotFound, match="wrong or has expired"):
        await blobs.read("org", UUID, expires_at, signature, 0, 10)


async def test_a_page_never_gets_bytes_that_are_not_their_type(setup: Setup) -> None:
    blobs, store, _clock, _records = setup
    blob = await blobs.upload_inline("org", UUID, PNG, "image/png")
    # Within the upload window a presigned object could be replaced: the bytes read are
    # checked again before a page gets them.
    store.objects[blob.object_key] = ("image/png", SVG)
    with pytest.raises(Refused, match="text or markup"):
        await blobs.read_for_page(BlobRef("org", UUID.lower(), blob.key), 1000)
