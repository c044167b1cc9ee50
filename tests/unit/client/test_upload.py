"""`upload_file` against a local server that plays both the API and the media store."""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from storypost_client import AsyncStorypostClient, RetryPolicy, StorypostClient, UploadError
from storypost_client.uploads import (
    CHUNK_BYTES,
    INLINE_MAX_BYTES,
    StoreUnreachable,
    UploadChangedError,
    UploadMethod,
    UploadPlan,
    aread_chunks,
    check_inline_fallback,
    put_retry_wait,
    read_chunks,
)
from tests.unit.client.support import (
    ORG_PATH,
    Reply,
    ScriptedServer,
    Seen,
    closed_port_url,
    scripted,
)

TOKEN = "sp_test-token"
SIZE = 3 * CHUNK_BYTES + 123


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "clip.mp4"
    path.write_bytes(bytes(range(256)) * (SIZE // 256) + b"x" * (SIZE % 256))
    return path


def api_and_store(upload_host: str | None, *, store_status: int = 200) -> Callable[[Seen], Reply]:
    """create-temp-blob-upload-url hands out `upload_host`/store/…; the store takes PUTs."""

    def answer(seen: Seen) -> Reply:
        if seen.method == "PUT":
            return Reply(
                store_status, {} if store_status == 200 else {"error": "SignatureDoesNotMatch"}
            )
        name = seen.path.removeprefix(f"{ORG_PATH}/")
        body = seen.json()
        blob = body["tempBlobUuid"]
        url = f"http://api.test/o/org-1/blobs/{blob}"
        if name == "create-temp-blob-upload-url":
            created = {"tempBlobUuid": blob, "url": url}
            if upload_host is not None:
                created["uploadUrl"] = f"{upload_host}/store/{blob}?X-Amz-Signature=abc"
            return Reply(200, created)
        if name == "upload-temp-blob":
            return Reply(200, {"tempBlobUuid": blob, "url": url})
        return Reply(404, {"errorMessage": f"unknown procedure: {name}"})

    return answer


def progress_log() -> tuple[list[tuple[int, int]], Callable[[int, int], None]]:
    calls: list[tuple[int, int]] = []
    return calls, lambda sent, total: calls.append((sent, total))


def assert_presigned_put(server: ScriptedServer, video: Path) -> None:
    create, put = server.seen
    assert create.json()["contentType"] == "video/mp4"
    assert create.json()["contentLengthBytes"] == SIZE
    assert put.method == "PUT"
    assert put.path == f"/store/{create.json()['tempBlobUuid']}?X-Amz-Signature=abc"
    # Exactly the declared type and length, the file's bytes, and no API token.
    assert put.headers["Content-Type"] == "video/mp4"
    assert put.headers["Content-Length"] == str(SIZE)
    assert "Transfer-Encoding" not in put.headers
    assert "Authorization" not in put.headers
    assert put.body == video.read_bytes()


def assert_progress(calls: list[tuple[int, int]]) -> None:
    assert calls[0] == (0, SIZE)
    assert calls[-1] == (SIZE, SIZE)
    sent = [s for s, _ in calls]
    assert sent == sorted(sent)
    # Streamed in chunks, each reported.
    assert len(calls) >= 5


def test_presigned_upload_streams_the_file_with_progress(video: Path) -> None:
    calls, progress = progress_log()
    with (
        scripted(lambda seen: api_and_store(server.url)(seen)) as server,
        StorypostClient(server.base_url, TOKEN) as client,
    ):
        uploaded = client.upload_file(video, progress=progress)
    assert_presigned_put(server, video)
    assert_progress(calls)
    blob = server.seen[0].json()["tempBlobUuid"]
    assert uuid.UUID(blob).version == 4
    assert uploaded == {
        "tempBlobUuid": blob,
        "url": f"http://api.test/o/org-1/blobs/{blob}",
        "contentType": "video/mp4",
        "sizeBytes": SIZE,
        "method": "presigned",
    }


def test_unreachable_store_falls_back_to_inline_under_a_new_uuid(video: Path) -> None:
    calls, progress = progress_log()
    with (
        scripted(api_and_store(closed_port_url())) as server,
        StorypostClient(server.base_url, TOKEN) as client,
    ):
        uploaded = client.upload_file(video, progress=progress, temp_blob_uuid=str(uuid.uuid4()))
    create, inline = server.seen
    assert inline.path == f"{ORG_PATH}/upload-temp-blob"
    sent = inline.json()
    assert base64.b64decode(sent["contentBase64"]) == video.read_bytes()
    assert sent["contentType"] == "video/mp4"
    # The presigned UUID is taken (an empty blob); the inline copy gets its own.
    assert sent["tempBlobUuid"] != create.json()["tempBlobUuid"]
    assert uploaded["tempBlobUuid"] == sent["tempBlobUuid"]
    assert uploaded["method"] == "inline"
    assert calls[-1] == (SIZE, SIZE)


def test_forced_presigned_upload_does_not_fall_back(video: Path) -> None:
    with (
        scripted(api_and_store(closed_port_url())) as server,
        StorypostClient(server.base_url, TOKEN) as client,
        pytest.raises(UploadError, match="cannot reach the upload URL"),
    ):
        client.upload_file(video, method="presigned")
    assert server.paths() == [f"{ORG_PATH}/create-temp-blob-upload-url"]


def test_store_refusing_the_put_is_an_upload_error(video: Path) -> None:
    with (
        scripted(lambda seen: api_and_store(server.url, store_status=403)(seen)) as server,
        StorypostClient(server.base_url, TOKEN) as client,
        pytest.raises(UploadError) as caught,
    ):
        client.upload_file(video)
    assert caught.value.status == 403
    assert "SignatureDoesNotMatch" in str(caught.value)
    assert len(server.seen) == 2


def test_an_existing_blob_sends_no_bytes(video: Path) -> None:
    calls, progress = progress_log()
    with (
        scripted(api_and_store(None)) as server,
        StorypostClient(server.base_url, TOKEN) as client,
    ):
        uploaded = client.upload_file(video, progress=progress)
    assert len(server.seen) == 1
    assert uploaded["method"] == "existing"
    assert calls == [(SIZE, SIZE)]


def test_inline_upload_on_request(tmp_path: Path) -> None:
    image = tmp_path / "pixel.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    with (
        scripted(api_and_store(None)) as server,
        StorypostClient(server.base_url, TOKEN) as client,
    ):
        uploaded = client.upload_file(image, method="inline")
    assert server.paths() == [f"{ORG_PATH}/upload-temp-blob"]
    assert server.seen[0].json()["contentType"] == "image/png"
    assert uploaded["method"] == "inline"


def test_files_the_api_would_refuse_are_refused_before_sending(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.touch()
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    big = tmp_path / "big.mp4"
    with big.open("wb") as file:
        file.truncate(31 * 1024 * 1024)
    with scripted([]) as server, StorypostClient(server.base_url, TOKEN) as client:
        with pytest.raises(ValueError, match="empty"):
            client.upload_file(empty)
        with pytest.raises(ValueError, match="text/plain"):
            client.upload_file(text)
        with pytest.raises(ValueError, match="not a file"):
            client.upload_file(tmp_path / "missing.mp4")
        with pytest.raises(ValueError, match="more than"):
            client.upload_file(big, method="inline")
        # An explicit type wins over the guess.
        with pytest.raises(ValueError, match="application/pdf"):
            client.upload_file(text, "application/pdf")
    assert server.seen == []


async def test_async_presigned_upload_with_progress(video: Path) -> None:
    calls, progress = progress_log()
    with scripted(lambda seen: api_and_store(server.url)(seen)) as server:
        async with AsyncStorypostClient(server.base_url, TOKEN) as client:
            uploaded = await client.upload_file(video, "video/mp4", progress=progress)
    assert_presigned_put(server, video)
    assert_progress(calls)
    assert uploaded["method"] == "presigned"


async def test_async_fallback_to_inline(video: Path) -> None:
    with scripted(api_and_store(closed_port_url())) as server:
        async with AsyncStorypostClient(server.base_url, TOKEN) as client:
            uploaded = await client.upload_file(video)
    assert server.paths()[-1] == f"{ORG_PATH}/upload-temp-blob"
    assert base64.b64decode(server.seen[-1].json()["contentBase64"]) == video.read_bytes()
    assert uploaded["method"] == "inline"


async def test_a_file_that_shrank_is_refused_by_both_readers(video: Path) -> None:
    claimed = SIZE + 10
    shrank = f"the file shrank during the upload \\({SIZE} of {claimed} bytes\\)"
    with video.open("rb") as file, pytest.raises(UploadChangedError, match=shrank):
        list(read_chunks(file, claimed, None))
    with pytest.raises(UploadChangedError, match=shrank):
        async with contextlib.aclosing(aread_chunks(video, claimed, None)) as chunks:
            async for _ in chunks:
                pass


RETRY_TWICE = RetryPolicy(max_attempts=2, base_delay=0.5, jitter=0.0)


@pytest.mark.parametrize(
    ("attempt", "outcome", "expected"),
    [
        pytest.param(1, httpx.Response(200), None, id="stored"),
        pytest.param(1, httpx.Response(503), 0.5, id="retried status"),
        pytest.param(2, httpx.Response(503), UploadError, id="retried status, last attempt"),
        pytest.param(1, httpx.Response(403), UploadError, id="refused"),
        pytest.param(1, httpx.ReadTimeout("slow"), 0.5, id="transport error"),
        pytest.param(2, httpx.ReadTimeout("slow"), StoreUnreachable, id="transport error, last"),
        pytest.param(1, httpx.ConnectError("refused"), StoreUnreachable, id="refused connection"),
    ],
)
def test_what_follows_a_put_attempt(
    attempt: int, outcome: httpx.Response | Exception, expected: float | type[Exception] | None
) -> None:
    if isinstance(expected, type):
        with pytest.raises(expected):
            put_retry_wait(RETRY_TWICE, attempt, outcome)
    else:
        assert put_retry_wait(RETRY_TWICE, attempt, outcome) == expected


@pytest.mark.parametrize(
    ("method", "size", "falls_back"),
    [
        pytest.param("auto", INLINE_MAX_BYTES, True, id="auto, small enough"),
        pytest.param("auto", INLINE_MAX_BYTES + 1, False, id="auto, too large for inline"),
        pytest.param("presigned", 1, False, id="forced presigned"),
    ],
)
def test_when_an_unreachable_store_falls_back_to_inline(
    method: UploadMethod, size: int, falls_back: bool
) -> None:
    plan = UploadPlan(Path("clip.mp4"), size, "video/mp4")
    unreachable = StoreUnreachable("ConnectError('refused')")
    if falls_back:
        check_inline_fallback(method, plan, unreachable)
        return
    with pytest.raises(UploadError, match="cannot reach the upload URL") as caught:
        check_inline_fallback(method, plan, unreachable)
    assert caught.value.__cause__ is unreachable
