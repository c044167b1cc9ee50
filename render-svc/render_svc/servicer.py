"""Thin gRPC methods of RenderService: proto in, domain call, proto out."""

from __future__ import annotations

from typing import Any

import grpc

from render_svc.blobs import TempBlob, TempBlobs
from render_svc.drafts import Drafts, DraftView
from render_svc.finisher import Finisher
from render_svc.renderer import DesignInput
from render_svc.renderings import Rendering, Renderings
from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp, to_datetime
from storypost_runtime.vocabulary import DraftStatus, proto_name

Context = grpc.aio.ServicerContext[Any, Any]

STATES = {
    "prepared": pb.RENDERING_STATE_PREPARED,
    "finishing": pb.RENDERING_STATE_FINISHING,
    "finished": pb.RENDERING_STATE_FINISHED,
    "failed": pb.RENDERING_STATE_FAILED,
}
KINDS = {"image": pb.MEDIA_KIND_IMAGE, "video": pb.MEDIA_KIND_VIDEO, "": pb.MEDIA_KIND_UNSPECIFIED}
DRAFT_STATUSES = {s.value: pb.DraftStatus.Value(proto_name("DRAFT_STATUS", s)) for s in DraftStatus}
USER_POSTS = {
    "none": pb.DRAFT_USER_POST_NONE,
    "scheduled": pb.DRAFT_USER_POST_SCHEDULED,
    "posted": pb.DRAFT_USER_POST_POSTED,
}


def _org(organization_id: str) -> str:
    if not organization_id:
        raise InvalidArgument("organization_id is required")
    return organization_id


def _design(request: Any) -> DesignInput:
    if not request.HasField("design"):
        raise InvalidArgument("exactly one of url or html must be given")
    return DesignInput.from_proto(request.design)


def _app_url(value: str) -> str:
    if not value:
        raise InvalidArgument("public_app_url is required")
    return value.rstrip("/")


def blob_pb(blob: TempBlob, app_url: str, upload_url: str | None = None) -> pb.TempBlob:
    return pb.TempBlob(
        temp_blob_uuid=blob.temp_blob_uuid,
        url=blob.url(app_url),
        upload_url=upload_url or "",
        content_type=blob.content_type,
        content_length_bytes=blob.content_length,
        expires_at=timestamp(blob.expires_at),
    )


def draft_pb(view: DraftView, app_url: str) -> pb.Draft:
    return pb.Draft(
        organization_id=view.organization_id,
        draft_uuid=view.draft_uuid,
        name=view.name,
        folder_name=view.folder_name,
        status=DRAFT_STATUSES[view.status],
        preview_url=view.preview_url or "",
        editor_url="" if view.deleted else f"{app_url}/drafts/{view.draft_uuid}",
        warnings=view.warnings,
        created_at=timestamp(view.created_at),
        version=view.version,
        user_post=USER_POSTS.get(view.user_post, pb.DRAFT_USER_POST_NONE),
        media_kind=KINDS.get(view.media_kind, pb.MEDIA_KIND_UNSPECIFIED),
        updated_at=timestamp(view.updated_at),
        error_message=view.error_message or "",
    )


class RenderServicer(render_pb2_grpc.RenderServiceServicer):
    def __init__(
        self, renderings: Renderings, finisher: Finisher, blobs: TempBlobs, drafts: Drafts
    ) -> None:
        self._renderings = renderings
        self._finisher = finisher
        self._blobs = blobs
        self._drafts = drafts

    async def _rendering_pb(self, rendering: Rendering) -> pb.Rendering:
        urls = await self._renderings.urls(rendering)
        return pb.Rendering(
            organization_id=rendering.organization_id,
            rendering_id=rendering.rendering_id,
            state=STATES[rendering.state],
            media_kind=KINDS[rendering.media_kind],
            warnings=rendering.warnings,
            stickers=[
                pb.Sticker(
                    kind=s.kind,
                    attributes=s.attributes,
                    x=s.x,
                    y=s.y,
                    width=s.width,
                    height=s.height,
                    photoapp_user_id=s.photoapp_user_id,
                )
                for s in rendering.stickers
            ],
            duration_seconds=rendering.duration_seconds or 0.0,
            media_url=urls.media_url if urls else "",
            preview_url=urls.preview_url if urls else "",
            error_message=rendering.error_message or "",
            purpose=rendering.purpose,  # type: ignore[arg-type]
            media_content_type=rendering.content_type,
            urls_expire_at=timestamp(urls.expires_at) if urls else None,
            created_at=timestamp(rendering.created_at),
            finished_at=timestamp(rendering.finished_at),
        )

    async def Prepare(self, request: pb.PrepareRequest, context: Context) -> pb.PrepareResponse:
        rendering = await self._renderings.prepare(
            _org(request.organization_id),
            request.rendering_id,
            _design(request),
            request.purpose,
            request.min_duration_seconds,
            request.max_duration_seconds,
        )
        return pb.PrepareResponse(rendering=await self._rendering_pb(rendering))

    async def Finish(self, request: pb.FinishRequest, context: Context) -> pb.Rendering:
        rendering = await self._finisher.finish(_org(request.organization_id), request.rendering_id)
        return await self._rendering_pb(rendering)

    async def GetRendering(self, request: pb.GetRenderingRequest, context: Context) -> pb.Rendering:
        rendering = await self._renderings.get(_org(request.organization_id), request.rendering_id)
        return await self._rendering_pb(rendering)

    async def CreateTempBlobUploadUrl(
        self, request: pb.CreateTempBlobUploadUrlRequest, context: Context
    ) -> pb.TempBlob:
        app_url = _app_url(request.public_app_url)
        blob, upload_url = await self._blobs.create_upload_url(
            _org(request.organization_id),
            request.temp_blob_uuid,
            request.content_type,
            request.content_length_bytes,
        )
        return blob_pb(blob, app_url, upload_url)

    async def UploadTempBlob(
        self, request: pb.UploadTempBlobRequest, context: Context
    ) -> pb.TempBlob:
        app_url = _app_url(request.public_app_url)
        blob = await self._blobs.upload_inline(
            _org(request.organization_id),
            request.temp_blob_uuid,
            request.content,
            request.content_type,
        )
        return blob_pb(blob, app_url)

    async def SignTempBlobDownload(
        self, request: pb.SignTempBlobDownloadRequest, context: Context
    ) -> pb.SignedTempBlobDownload:
        expires_at, signature = await self._blobs.sign_download(
            _org(request.organization_id), request.temp_blob_uuid, request.key
        )
        return pb.SignedTempBlobDownload(expires_at=expires_at, signature=signature)

    async def ReadTempBlob(
        self, request: pb.ReadTempBlobRequest, context: Context
    ) -> pb.TempBlobPart:
        part = await self._blobs.read(
            _org(request.organization_id),
            request.temp_blob_uuid,
            request.expires_at,
            request.signature,
            request.offset,
            request.length,
        )
        return pb.TempBlobPart(
            content_type=part.content_type,
            content_disposition=part.disposition,
            total_length=part.total_length,
            data=part.data,
        )

    async def CreateDraft(self, request: pb.CreateDraftRequest, context: Context) -> pb.Draft:
        app_url = _app_url(request.public_app_url)
        view = await self._drafts.create(
            _org(request.organization_id),
            request.draft_uuid,
            _design(request),
            request.name,
            request.folder_name,
        )
        return draft_pb(view, app_url)

    async def GetDraft(self, request: pb.GetDraftRequest, context: Context) -> pb.Draft:
        view = await self._drafts.get(_org(request.organization_id), request.draft_uuid)
        return draft_pb(view, _app_url(request.public_app_url))

    async def DeleteDraft(self, request: pb.DeleteDraftRequest, context: Context) -> pb.Draft:
        view = await self._drafts.delete(
            _org(request.organization_id), request.draft_uuid, by_user=request.by_user
        )
        return draft_pb(view, _app_url(request.public_app_url))

    async def SaveDraftVersion(
        self, request: pb.SaveDraftVersionRequest, context: Context
    ) -> pb.Draft:
        view = await self._drafts.save_version(
            _org(request.organization_id),
            request.draft_uuid,
            request.version_uuid,
            _design(request),
        )
        return draft_pb(view, _app_url(request.public_app_url))

    async def SetDraftUserPost(
        self, request: pb.SetDraftUserPostRequest, context: Context
    ) -> pb.Draft:
        view = await self._drafts.set_user_post(
            _org(request.organization_id), request.draft_uuid, request.user_post
        )
        return draft_pb(view, _app_url(request.public_app_url))

    async def ListDrafts(
        self, request: pb.ListDraftsRequest, context: Context
    ) -> pb.ListDraftsResponse:
        app_url = _app_url(request.public_app_url)
        views = await self._drafts.list_drafts(
            _org(request.organization_id),
            request.folder_name,
            include_deleted=request.include_deleted,
            limit=request.limit,
            created_before=(
                to_datetime(request.created_before) if request.HasField("created_before") else None
            ),
        )
        return pb.ListDraftsResponse(drafts=[draft_pb(view, app_url) for view in views])

    async def ListDraftFolders(
        self, request: pb.ListDraftFoldersRequest, context: Context
    ) -> pb.ListDraftFoldersResponse:
        names = await self._drafts.folders(_org(request.organization_id))
        return pb.ListDraftFoldersResponse(folder_names=names)

    async def GetDraftDesign(self, request: pb.GetDraftRequest, context: Context) -> pb.Design:
        design = await self._drafts.design(_org(request.organization_id), request.draft_uuid)
        return design.to_proto()
