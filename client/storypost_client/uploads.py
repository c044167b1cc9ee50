"""Temp blob uploads: checking the file, streaming it with progress, the inline fallback body."""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import re
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypedDict

import httpx

from storypost_client.errors import UploadError
from storypost_client.retry import RetryPolicy
from storypost_client.transport import upload_refused

# The limits of the spec: presigned uploads 1 to 100 MB, inline uploads 30 MB decoded.
PRESIGNED_MAX_BYTES = 104_857_600
INLINE_MAX_BYTES = 30 * 1024 * 1024
CHUNK_BYTES = 256 * 1024
CONTENT_TYPE = re.compile(r"^(image|video|audio)/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$")
# A PUT of up to 100 MB: a generous read timeout for the store's answer after the last byte.
PUT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)

# progress(bytes_sent, total_bytes): called as the bytes go out (and once at the end).
Progress = Callable[[int, int], None]
UploadMethod = Literal["auto", "presigned", "inline"]
# How a blob got to the store (UploadedFile's `method`).
UploadedBy = Literal["presigned", "inline", "existing"]


class UploadedFile(TypedDict):
    """What `upload_file` returns: the blob to use as `src`, and how it got there."""

    tempBlobUuid: str
    # Stable URL of the blob: use it as `src` in the `html` of the render procedures.
    url: str
    contentType: str
    sizeBytes: int
    # `presigned` (PUT to uploadUrl), `inline` (upload-temp-blob) or `existing` (the UUID
    # was already uploaded: nothing was sent).
    method: UploadedBy


@dataclass(frozen=True)
class UploadPlan:
    path: Path
    size: int
    content_type: str

    def put_headers(self) -> dict[str, str]:
        # Exactly what the presigned URL was signed for; no Authorization (it is not ours).
        return {"Content-Type": self.content_type, "Content-Length": str(self.size)}

    def uploaded(self, temp_blob_uuid: str, url: str, method: UploadedBy) -> UploadedFile:
        return UploadedFile(
            tempBlobUuid=temp_blob_uuid,
            url=url,
            contentType=self.content_type,
            sizeBytes=self.size,
            method=method,
        )


def plan_upload(path: str | Path, content_type: str | None, method: UploadMethod) -> UploadPlan:
    """Checks the file against the spec's limits before anything is sent (ValueError if not)."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{file}: not a file")
    size = file.stat().st_size
    if size < 1:
        raise ValueError(f"{file}: empty file (a temp blob has at least 1 byte)")
    limit = INLINE_MAX_BYTES if method == "inline" else PRESIGNED_MAX_BYTES
    if size > limit:
        raise ValueError(f"{file}: {size} bytes is more than the {limit} bytes a temp blob takes")
    if content_type is None:
        content_type, _ = mimetypes.guess_type(file.name)
    if content_type is None or not CONTENT_TYPE.match(content_type):
        raise ValueError(
            f"{file}: content type {content_type or 'unknown'}; temp blobs are image/*, "
            "video/* or audio/* (pass content_type)"
        )
    return UploadPlan(file, size, content_type)


def read_chunks(file: BinaryIO, size: int, progress: Progress | None) -> Iterator[bytes]:
    """The file's first `size` bytes in chunks, reporting progress; UploadChanged if short."""
    sent = 0
    if progress:
        progress(0, size)
    while sent < size:
        chunk = file.read(min(CHUNK_BYTES, size - sent))
        sent = _sent_after(chunk, sent, size)
        yield chunk
        if progress:
            progress(sent, size)


async def aread_chunks(path: Path, size: int, progress: Progress | None) -> AsyncGenerator[bytes]:
    """`read_chunks` for the async client: file reads run in a worker thread."""
    file = await asyncio.to_thread(path.open, "rb")
    try:
        sent = 0
        if progress:
            progress(0, size)
        while sent < size:
            chunk = await asyncio.to_thread(file.read, min(CHUNK_BYTES, size - sent))
            sent = _sent_after(chunk, sent, size)
            yield chunk
            if progress:
                progress(sent, size)
    finally:
        await asyncio.to_thread(file.close)


def _sent_after(chunk: bytes, sent: int, size: int) -> int:
    """The bytes sent once `chunk` is (both readers): a file that ends before `size` bytes
    changed since it was planned (UploadChangedError)."""
    if not chunk:
        raise UploadChangedError(f"the file shrank during the upload ({sent} of {size} bytes)")
    return sent + len(chunk)


def put_retry_wait(
    retry: RetryPolicy, attempt: int, outcome: httpx.Response | Exception
) -> float | None:
    """What follows PUT attempt `attempt` (1-based) of both clients, given its `outcome`: the
    store's answer, or a transient transport error. None: the store has the file; else the
    seconds to wait before the next attempt (what `retry` retries, up to its last attempt).
    Raises StoreUnreachable when the store cannot be reached (a refused connection at once,
    other transport errors on the last attempt), UploadError when it refuses the bytes."""
    if isinstance(outcome, Exception):
        if isinstance(outcome, httpx.ConnectError) or attempt >= retry.max_attempts:
            raise StoreUnreachable(repr(outcome)) from outcome
        return retry.delay(attempt) or 0.0
    if outcome.is_success:
        return None
    if outcome.status_code in retry.statuses and attempt < retry.max_attempts:
        return retry.delay(attempt) or 0.0
    raise upload_refused(outcome)


def sent_whole(
    plan: UploadPlan, answer: Mapping[str, Any], method: UploadedBy, progress: Progress | None
) -> UploadedFile:
    """The blob that `answer` (of create-temp-blob-upload-url or upload-temp-blob) names, sent
    in one piece (`inline`) or earlier (`existing`): `progress` hears that all bytes are in."""
    if progress:
        progress(plan.size, plan.size)
    return plan.uploaded(answer["tempBlobUuid"], answer["url"], method)


def check_inline_fallback(
    method: UploadMethod, plan: UploadPlan, unreachable: StoreUnreachable
) -> None:
    """Raises UploadError unless an upload whose URL cannot be reached may go inline instead
    (method `auto`, a file of at most INLINE_MAX_BYTES)."""
    if method == "presigned" or plan.size > INLINE_MAX_BYTES:
        raise UploadError(f"cannot reach the upload URL: {unreachable}") from unreachable


def inline_body(plan: UploadPlan, temp_blob_uuid: str) -> dict[str, str]:
    """The upload-temp-blob request: the whole file as base64."""
    data = plan.path.read_bytes()
    if len(data) != plan.size:
        raise UploadChangedError("the file changed during the upload")
    return {
        "tempBlobUuid": temp_blob_uuid,
        "contentBase64": base64.b64encode(data).decode("ascii"),
        "contentType": plan.content_type,
    }


class UploadChangedError(ValueError):
    """The file changed size while it was being uploaded."""


class StoreUnreachable(Exception):
    """The presigned URL's host could not be reached: the inline fallback may help."""
