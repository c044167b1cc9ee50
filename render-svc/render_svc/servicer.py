"""Thin gRPC methods of RenderService: proto in, domain call, proto out."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

import grpc

from render_svc.blobs import TempBlobs
from render_svc.convert import (
    app_url_of,
    blob_pb,
    design_of,
    draft_pb,
    org_of,
    rendering_pb,
)
from render_svc.drafts import Drafts
from render_svc.finisher import Finisher
from render_svc.renderings import Rendering, Renderings
from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.protobuf import to_datetime

Context = grpc.aio.ServicerContext[Any, Any]


@component
class RenderServicer(render_pb2_grpc.RenderServiceServicer):
    _: KW_ONLY
    renderings: Renderings
    finisher: Finisher
    blobs: TempBlobs
    drafts: Drafts

    async def _rendering_pb(self, rendering: Rendering) -> pb.Rendering:
        return rendering_pb(rendering, await self.renderings.urls(rendering))

    async def Prepare(self, request: pb.PrepareRequest, context: Context) -> pb.PrepareResponse:
        rendering = await self.renderings.prepare(
            org_of(request.organization_id),
            request.rendering_id,
            design_of(request),
            request.purpose,
            request.min_duration_seconds,
            request.max_duration_seconds,
        )
        return pb.PrepareResponse(rendering=await self._rendering_pb(rendering))

    async def Finish(self, request: pb.FinishRequest, context: Context) -> pb.Rendering:
        rendering = await self.finisher.finish(
            org_of(request.organization_id), request.rendering_id
        )
        return await self._rendering_pb(rendering)

    async def GetRendering(self, request: pb.GetRenderingRequest, context: Context) -> pb.Rendering:
        rendering = await self.renderings.get(org_of(request.organization_id), request.rendering_id)
        return await self._rendering_pb(rendering)

    async def CreateTempBlobUploadUrl(
        self, request: pb.CreateTempBlobUploadUrlRequest, context: Context
    ) -> pb.TempBlob:
        app_url = app_url_of(request.public_app_url)
        blob, upload_url = await self.blobs.create_upload_url(
            org_of(request.organization_id),
            request.temp_blob_uuid,
            request.content_type,
            request.content_length_bytes,
        )
        return blob_pb(blob, app_url, upload_url)

    async def UploadTempBlob(
        self, request: pb.UploadTempBlobRequest, context: Context
    ) -> pb.TempBlob:
        app_url = app_url_of(request.public_app_url)
        blob = await self.blobs.upload_inline(
            org_of(request.organization_id),
            request.temp_blob_uuid,
            request.content,
            request.content_type,
        )
        return blob_pb(blob, app_url)

    async def SignTempBlobDownload(
        self, request: pb.SignTempBlobDownloadRequest, context: Context
    ) -> pb.SignedTempBlobDownload:
        expires_at, signature = await self.blobs.sign_download(
            org_of(request.organization_id), request.temp_blob_uuid, request.key
        )
        return pb.SignedTempBlobDownload(expires_at=expires_at, signature=signature)

    async def ReadTempBlob(
        self, request: pb.ReadTempBlobRequest, context: Context
    ) -> pb.TempBlobPart:
        part = await self.blobs.read(
            org_of(request.organization_id),
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
        app_url = app_url_of(request.public_app_url)
        view = await self.drafts.create(
            org_of(request.organization_id),
            request.draft_uuid,
            design_of(request),
            request.name,
            request.folder_name,
        )
        return draft_pb(view, app_url)

    async def GetDraft(self, request: pb.GetDraftRequest, context: Context) -> pb.Draft:
        view = await self.drafts.get(org_of(request.organization_id), request.draft_uuid)
        return draft_pb(view, app_url_of(request.public_app_url))

    async def DeleteDraft(self, request: pb.DeleteDraftRequest, context: Context) -> pb.Draft:
        view = await self.drafts.delete(
            org_of(request.organization_id), request.draft_uuid, by_user=request.by_user
        )
        return draft_pb(view, app_url_of(request.public_app_url))

    async def SaveDraftVersion(
        self, request: pb.SaveDraftVersionRequest, context: Context
    ) -> pb.Draft:
        view = await self.drafts.save_version(
            org_of(request.organization_id),
            request.draft_uuid,
            request.version_uuid,
            design_of(request),
        )
        return draft_pb(view, app_url_of(request.public_app_url))

    async def SetDraftUserPost(
        self, request: pb.SetDraftUserPostRequest, context: Context
    ) -> pb.Draft:
        view = await self.drafts.set_user_post(
            org_of(request.organization_id), request.draft_uuid, request.user_post
        )
        return draft_pb(view, app_url_of(request.public_app_url))

    async def ListDrafts(
        self, request: pb.ListDraftsRequest, context: Context
    ) -> pb.ListDraftsResponse:
        app_url = app_url_of(request.public_app_url)
        views = await self.drafts.list_drafts(
            org_of(request.organization_id),
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
        names = await self.drafts.folders(org_of(request.organization_id))
        return pb.ListDraftFoldersResponse(folder_names=names)

    async def GetDraftDesign(self, request: pb.GetDraftRequest, context: Context) -> pb.Design:
        design = await self.drafts.design(org_of(request.organization_id), request.draft_uuid)
        return design.to_proto()
