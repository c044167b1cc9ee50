"""GET of a stable temp blob URL: 302 to a short-lived presigned download URL, or 404 JSON.

`/o/<org>/blobs/<uuid>/<key>` needs no bearer token (it is used as `src` in pages that
browsers load); the 128-bit random key in the URL is the permission.
"""

from __future__ import annotations

import falcon
import grpc

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.errors import ApiError, api_error_from_rpc
from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc

BLOB_ROUTE = "/o/{organization_id}/blobs/{temp_blob_uuid}/{key}"
NOT_FOUND = "temp blob not found (unknown, expired or never uploaded)"


class TempBlobDownload:
    def __init__(self, backends: Backends) -> None:
        self._render = render_pb2_grpc.RenderServiceStub(backends.render)

    def on_get(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        organization_id: str,
        temp_blob_uuid: str,
        key: str,
    ) -> None:
        try:
            reply = self._render.GetTempBlobDownloadUrl(
                pb.GetTempBlobDownloadUrlRequest(
                    organization_id=organization_id, temp_blob_uuid=temp_blob_uuid, key=key
                )
            )
        except grpc.RpcError as error:
            code = error.code()
            if code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
                raise ApiError(404, NOT_FOUND) from None
            raise api_error_from_rpc(error) from None
        resp.status = falcon.HTTP_302
        resp.location = reply.download_url
        # The target expires within minutes: nobody may keep the redirect.
        resp.cache_control = ["no-store"]

    on_head = on_get


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    app.add_route(BLOB_ROUTE, TempBlobDownload(backends))
