"""Conversions between render_svc's domain objects and its protos (the servicer's two sides)."""

from __future__ import annotations

from typing import Any

from render_svc.blobs import TempBlob
from render_svc.drafts import DraftView
from render_svc.renderer import DesignInput
from render_svc.renderings import MediaUrls, Rendering
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp
from storypost_runtime.vocabulary import DraftStatus, ProtoWords

STATES = {
    "prepared": pb.RENDERING_STATE_PREPARED,
    "finishing": pb.RENDERING_STATE_FINISHING,
    "finished": pb.RENDERING_STATE_FINISHED,
    "failed": pb.RENDERING_STATE_FAILED,
}
KINDS = {"image": pb.MEDIA_KIND_IMAGE, "video": pb.MEDIA_KIND_VIDEO, "": pb.MEDIA_KIND_UNSPECIFIED}
DRAFT_STATUSES = ProtoWords.of(pb.DraftStatus, "DRAFT_STATUS", DraftStatus)
USER_POSTS = {
    "none": pb.DRAFT_USER_POST_NONE,
    "scheduled": pb.DRAFT_USER_POST_SCHEDULED,
    "posted": pb.DRAFT_USER_POST_POSTED,
}


def org_of(organization_id: str) -> str:
    if not organization_id:
        raise InvalidArgument("organization_id is required")
    return organization_id


def design_of(request: Any) -> DesignInput:
    if not request.HasField("design"):
        raise InvalidArgument("exactly one of url or html must be given")
    return DesignInput.from_proto(request.design)


def app_url_of(value: str) -> str:
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


def rendering_pb(rendering: Rendering, urls: MediaUrls | None) -> pb.Rendering:
    """A rendering with its media URLs (None: no media yet)."""
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


def draft_pb(view: DraftView, app_url: str) -> pb.Draft:
    return pb.Draft(
        organization_id=view.organization_id,
        draft_uuid=view.draft_uuid,
        name=view.name,
        folder_name=view.folder_name,
        status=DRAFT_STATUSES.pb[view.status],
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
