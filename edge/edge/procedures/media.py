"""Handlers of temp blobs and drafts (render-svc)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from edge.backends import Backends
from edge.catalog.media import UPLOAD_TEMP_BLOB
from edge.config import EdgeSettings
from edge.errors import ApiError
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from edge.procedures.posts import design
from edge.validation import validation_body
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.vocabulary import DraftStatus, ProtoWords

# 41,943,040 base64 characters decode to at most 30 MiB.
MAX_INLINE_BYTES = 31_457_280
DRAFT_STATUSES = ProtoWords.of(pb.DraftStatus, "DRAFT_STATUS", DraftStatus)


def decode_base64(text: str) -> bytes:
    """Standard base64 (padding required, whitespace refused); the spec's 400 otherwise."""
    try:
        content = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(
            400,
            "invalid params",
            body=validation_body(
                UPLOAD_TEMP_BLOB,
                {"contentBase64": ["not valid base64 (standard alphabet, with padding)"]},
            ),
        ) from None
    if not content or len(content) > MAX_INLINE_BYTES:
        raise ApiError(
            400,
            "invalid params",
            body=validation_body(
                UPLOAD_TEMP_BLOB,
                {"contentBase64": [f"must decode to 1 to {MAX_INLINE_BYTES} bytes (30 MB)"]},
            ),
        )
    return content


def named_draft[Request](
    request_type: Callable[..., Request], ctx: CallContext, params: Mapping[str, Any]
) -> Request:
    """The request about the draft a procedure names (`draftUuid`), with the app's URL for its
    editor link."""
    return request_type(
        organization_id=ctx.organization_id,
        draft_uuid=params["draftUuid"],
        public_app_url=ctx.app_url,
    )


def _blob_answer(blob: pb.TempBlob) -> JsonObject:
    answer: JsonObject = {"tempBlobUuid": blob.temp_blob_uuid, "url": blob.url}
    if blob.upload_url:
        answer["uploadUrl"] = blob.upload_url
    return answer


def _draft_status(draft: pb.Draft) -> JsonObject:
    answer: JsonObject = {
        "draftUuid": draft.draft_uuid,
        "status": DRAFT_STATUSES.word.get(draft.status, "rendering"),
    }
    if draft.preview_url:
        answer["previewUrl"] = draft.preview_url
    if draft.editor_url:
        answer["editorUrl"] = draft.editor_url
    return answer


@component
class MediaProcedures:
    """Temp blobs and drafts (render-svc); each method is the procedure of its name."""

    backends: Backends
    settings: EdgeSettings

    @procedure("create-temp-blob-upload-url")
    def create_temp_blob_upload_url(
        self, ctx: CallContext, params: Mapping[str, Any]
    ) -> JsonObject:
        blob = self.backends.render_stub.CreateTempBlobUploadUrl(
            pb.CreateTempBlobUploadUrlRequest(
                organization_id=ctx.organization_id,
                temp_blob_uuid=params["tempBlobUuid"],
                content_type=params["contentType"],
                content_length_bytes=params["contentLengthBytes"],
                public_app_url=ctx.app_url,
            )
        )
        return _blob_answer(blob)

    @procedure("upload-temp-blob")
    def upload_temp_blob(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        content = decode_base64(params["contentBase64"])
        blob = self.backends.render_stub.UploadTempBlob(
            pb.UploadTempBlobRequest(
                organization_id=ctx.organization_id,
                temp_blob_uuid=params["tempBlobUuid"],
                content=content,
                content_type=params["contentType"],
                public_app_url=ctx.app_url,
            ),
            # Up to 30 MB travel to S3 within the call.
            timeout=60.0,
        )
        return _blob_answer(blob)

    @procedure("create-draft")
    def create_draft(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        draft = self.backends.render_stub.CreateDraft(
            pb.CreateDraftRequest(
                organization_id=ctx.organization_id,
                draft_uuid=params["draftUuid"],
                design=design(params),
                name=params.get("name", ""),
                folder_name=params.get("folderName", ""),
                public_app_url=ctx.app_url,
            ),
            timeout=self.settings.render_deadline_seconds,
        )
        answer: JsonObject = {
            "draftUuid": draft.draft_uuid,
            # A deleted draft's repeat still answers with where its editor page is.
            "editorUrl": draft.editor_url or f"{ctx.app_url}/drafts/{draft.draft_uuid}",
        }
        if draft.warnings:
            answer["warnings"] = list(draft.warnings)
        return answer

    @procedure("status-draft")
    def status_draft(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return _draft_status(
            self.backends.render_stub.GetDraft(named_draft(pb.GetDraftRequest, ctx, params))
        )

    @procedure("delete-draft")
    def delete_draft(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        draft = self.backends.render_stub.DeleteDraft(
            named_draft(pb.DeleteDraftRequest, ctx, params)
        )
        return {"draftUuid": draft.draft_uuid, "status": "deleted"}


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(MediaProcedures(backends, settings))
