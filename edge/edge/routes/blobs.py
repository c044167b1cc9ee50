"""Temp blob downloads: the stable URL's 302, and the short-lived download it points to.

`/o/<org>/blobs/<uuid>/<key>` needs no bearer token (it is used as `src` in pages that
browsers load); the 128-bit random key in the URL is the permission. Its GET answers 302 to
`/o/<org>/blobs/<uuid>/download/<expires>/<signature>` (render-svc signs it for
STORYPOST_TEMP_BLOB_DOWNLOAD_SECONDS, 5 minutes), which the edge serves itself, part after
part from render-svc (ReadTempBlob), with single byte ranges (video players seek) and
`X-Content-Type-Options: nosniff`. Why not a presigned S3 URL, as before: no S3 can add
nosniff to its answers, and a browser that sniffs may run script from bytes that only claim
to be an image. Types that cannot be verified (SVG…) come as attachments of a neutral type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import falcon
import grpc

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.errors import ApiError, api_error_from_rpc
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.component import component

BLOB_ROUTE = "/o/{organization_id}/blobs/{temp_blob_uuid}/{key}"
DOWNLOAD_ROUTE = "/o/{organization_id}/blobs/{temp_blob_uuid}/download/{expires_at:int}/{signature}"
NOT_FOUND = "temp blob not found (unknown, expired or never uploaded)"
# Bytes asked of render-svc per call (its answers carry at most 4 MiB).
PART_BYTES = 4 * 1024 * 1024
# Headers of every download: never sniffed, never run as a document of our origin.
DOWNLOAD_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cache-Control": "no-store",
    "Accept-Ranges": "bytes",
}


def _raise_for(error: grpc.RpcError) -> NoReturn:
    code = error.code()
    if code == grpc.StatusCode.NOT_FOUND:
        raise ApiError(404, error.details() or NOT_FOUND) from None
    # INVALID_ARGUMENT: bytes that are not their declared type, a 400 naming the blob.
    raise api_error_from_rpc(error) from None


@component
class TempBlobRedirect:
    backends: Backends
    settings: EdgeSettings

    def on_get(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        organization_id: str,
        temp_blob_uuid: str,
        key: str,
    ) -> None:
        try:
            signed = self.backends.render_stub.SignTempBlobDownload(
                pb.SignTempBlobDownloadRequest(
                    organization_id=organization_id, temp_blob_uuid=temp_blob_uuid, key=key
                )
            )
        except grpc.RpcError as error:
            _raise_for(error)
        resp.status = falcon.HTTP_302
        resp.location = (
            f"{self.settings.app_url(organization_id)}/blobs/{temp_blob_uuid.lower()}"
            f"/download/{signed.expires_at}/{signed.signature}"
        )
        # The target expires within minutes: nobody may keep the redirect.
        resp.cache_control = ["no-store"]

    on_head = on_get


@component
class TempBlobDownload:
    backends: Backends

    def _read(self, name: tuple[str, str, int, str], offset: int, length: int) -> pb.TempBlobPart:
        organization_id, temp_blob_uuid, expires_at, signature = name
        part: pb.TempBlobPart = self.backends.render_stub.ReadTempBlob(
            pb.ReadTempBlobRequest(
                organization_id=organization_id,
                temp_blob_uuid=temp_blob_uuid,
                expires_at=expires_at,
                signature=signature,
                offset=offset,
                length=length,
            )
        )
        return part

    def _parts(self, name: tuple[str, str, int, str], start: int, end: int) -> Iterator[bytes]:
        """The bytes start..end (inclusive), part after part. A failure past the headers
        can only end the answer early (the client sees it short of Content-Length)."""
        offset = start
        while offset <= end:
            part = self._read(name, offset, min(PART_BYTES, end - offset + 1))
            if not part.data:
                return
            yield part.data
            offset += len(part.data)

    def on_get(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        organization_id: str,
        temp_blob_uuid: str,
        expires_at: int,
        signature: str,
    ) -> None:
        name = (organization_id, temp_blob_uuid, expires_at, signature)
        try:
            head = self._read(name, 0, 0)  # the headers' values; no bytes yet
        except grpc.RpcError as error:
            _raise_for(error)
        total = head.total_length
        resp.set_headers(DOWNLOAD_HEADERS)
        resp.content_type = head.content_type
        resp.set_header("Content-Disposition", head.content_disposition)
        start, end = 0, total - 1
        wanted = _single_range(req)
        if wanted is not None:
            first, last = wanted
            if first < 0:  # the last -first bytes
                start = max(0, total + first)
            else:
                start, end = first, (end if last < 0 else min(last, end))
            if start >= total or start > end:
                resp.status = falcon.HTTP_416
                resp.set_header("Content-Range", f"bytes */{total}")
                resp.content_length = 0
                return
            resp.status = falcon.HTTP_206
            resp.content_range = (start, end, total)
        resp.content_length = end - start + 1
        if req.method != "HEAD":
            resp.stream = self._parts(name, start, end)

    on_head = on_get


def _single_range(req: falcon.Request) -> tuple[int, int] | None:
    """The one byte range asked for, as falcon parses it ((first, -1): to the end; (-n, -1):
    the last n bytes), or None: no Range, another unit or several ranges (answered whole,
    as RFC 9110 allows)."""
    try:
        wanted = req.range
        unit = req.range_unit
    except falcon.HTTPBadRequest:
        return None
    if wanted is None or unit != "bytes":
        return None
    return wanted


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    app.add_route(BLOB_ROUTE, TempBlobRedirect(backends, settings))
    app.add_route(DOWNLOAD_ROUTE, TempBlobDownload(backends))
