"""Procedure records of media: temp blobs and drafts in the gallery."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure

_IMAGE_BLOB_UUID = "c1acb880-3bbc-4958-b1c0-4606411bf8f6"
_DRAFT_UUID = "a1ff09d9-2879-43cc-8f85-10e8326f954d"
_DRAFT = f.Subject("draftUuid", "draft", _DRAFT_UUID, "drafts")
_BLOBS = f"{f.EXAMPLE_APP_URL}/o/{f.EXAMPLE_ORGANIZATION_ID}/blobs"
# The last path segment of a blob URL is a 128-bit random key: the URL is the permission.
_IMAGE_BLOB_URL = f"{_BLOBS}/{_IMAGE_BLOB_UUID}/Xq3VfL0c9aJk2mT7pR1wZg"
_VIDEO_BLOB_URL = f"{_BLOBS}/{f.EXAMPLE_VIDEO_BLOB_UUID}/hV8sK2nQ4bLw0cYe6tRj1A"
_DRAFT_EDITOR_URL = f"{f.EXAMPLE_APP_URL}/o/{f.EXAMPLE_ORGANIZATION_ID}/drafts/{_DRAFT_UUID}"
_DRAFT_PREVIEW_URL = (
    f"https://media.storypost.example.com/storypost-media/renderings/"
    f"{f.EXAMPLE_ORGANIZATION_ID}/draft-{_DRAFT_UUID}-{_DRAFT_UUID}/9c4e1f0a2b7d3e58.jpg"
    "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
    "&X-Amz-Signature=5e0d8f2a7c1b9e3d6f4a2c8b0e7d1f3a5c9e2b4d6f8a0c1e3b5d7f9a2c4e6b8d"
)
_BLOB_URL_DOC = (
    "Stable URL of the blob (a GET answers with a 302 redirect to a download URL valid for "
    "5 minutes; no bearer token needed, the URL's last segment is a random key); use it as "
    "`src` in the `html` of the render procedures within about 24 hours."
)


CREATE_TEMP_BLOB_UPLOAD_URL = Procedure(
    name="create-temp-blob-upload-url",
    summary="Creates a presigned URL to upload a media file (up to 100 MB) as a temp blob.",
    doc=(
        "Creates a temporary media blob and a presigned `uploadUrl` for its bytes, for media "
        "that only exists as a local file (a video for `<photoapp-story src>`, an image, "
        "audio).\n\n"
        "1. Call this procedure with the blob's `contentType` (`image/*`, `video/*` or "
        "`audio/*`) and exact size `contentLengthBytes` (1 to 104857600 bytes, 100 MB).\n"
        "2. PUT the file bytes to `uploadUrl` within 15 minutes, sending exactly this "
        "`Content-Type` and `Content-Length`.\n"
        "3. Use `url` as `src` in the `html` of the render procedures within about 24 "
        "hours: a GET of `url` answers with a 302 redirect to a short-lived download URL.\n\n"
        "Temp blobs are immutable and deleted automatically about one day after upload. A PUT "
        "with another `Content-Type` or `Content-Length`, or after the 15 minutes, is refused "
        "by the store (HTTP 403). Until the bytes arrive, a GET of `url` answers 404.\n\n"
        "**Idempotency:** when a blob with this `tempBlobUuid` already exists, the same "
        "`tempBlobUuid` and `url` are returned; `uploadUrl` is the same URL as in the first "
        "answer while the bytes have not arrived and the 15 minutes are not over (a retry "
        "whose answer was lost can still upload), and absent once the blob has its bytes. For "
        "environments that cannot PUT to a presigned URL, use `upload-temp-blob`."
    ),
    input_schema=f.input_object(
        {
            "tempBlobUuid": f.caller_uuid("temp blob"),
            "contentType": {
                **f.content_type(),
                "description": (
                    "Media type of the file (`image/*`, `video/*` or `audio/*`); the upload "
                    "must send exactly this `Content-Type`."
                ),
            },
            "contentLengthBytes": f.integer(
                "Size of the file in bytes (at most 100 MB); the upload must send exactly "
                "this `Content-Length`.",
                minimum=1,
                maximum=104_857_600,
            ),
        },
        ("tempBlobUuid", "contentType", "contentLengthBytes"),
    ),
    output_schema=f.uuid_output(
        "tempBlobUuid",
        "blob",
        {
            "url": f.link(_BLOB_URL_DOC),
            "uploadUrl": f.link(
                "Presigned URL to PUT the bytes to within 15 minutes; absent when the blob "
                "already has its bytes."
            ),
        },
        ("url",),
    ),
    example_input={
        "tempBlobUuid": f.EXAMPLE_VIDEO_BLOB_UUID,
        "contentType": "video/mp4",
        "contentLengthBytes": 18_874_368,
    },
    example_output={
        "tempBlobUuid": f.EXAMPLE_VIDEO_BLOB_UUID,
        "url": _VIDEO_BLOB_URL,
        "uploadUrl": (
            "https://media.storypost.example.com/storypost-media/temp-blobs/"
            f"{f.EXAMPLE_ORGANIZATION_ID}/{f.EXAMPLE_VIDEO_BLOB_UUID}/4f1c8a2e9b3d7c60"
            "?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=storypost%2F20260701%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20260701T091500Z&X-Amz-Expires=900"
            "&X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost"
            "&X-Amz-Signature=3f1c9a7e5b2d4c6f8a0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d2f4a"
        ),
    },
    tags=("media",),
)

UPLOAD_TEMP_BLOB = Procedure(
    name="upload-temp-blob",
    summary="Uploads a media file (up to 30 MB) inline as base64 and stores it as a temp blob.",
    doc=(
        "Fallback for environments that cannot PUT to the presigned URL of "
        "`create-temp-blob-upload-url`: the file travels inside the request as base64 "
        "(`contentBase64`, at most 41943040 characters, 30 MB decoded). `contentType` must "
        "be `image/*`, `video/*` or `audio/*`.\n\n"
        "Use the returned `url` as `src` in the `html` of the render procedures within "
        "about 24 hours. Temp blobs are immutable and deleted automatically about one day "
        "after upload. `contentBase64` that is not valid standard base64 (with padding, no "
        "whitespace) is a validation error (HTTP 400).\n\n"
        "**Idempotency:** when a blob with this `tempBlobUuid` already exists, the upload is "
        "ignored and the same success response is returned."
    ),
    input_schema=f.input_object(
        {
            "tempBlobUuid": f.caller_uuid("temp blob"),
            "contentBase64": f.string(
                "The file, base64-encoded (standard alphabet); at most 30 MB decoded.",
                min_length=1,
                max_length=41_943_040,
            ),
            "contentType": f.content_type(),
        },
        ("tempBlobUuid", "contentBase64", "contentType"),
    ),
    output_schema=f.uuid_output("tempBlobUuid", "blob", {"url": f.link(_BLOB_URL_DOC)}, ("url",)),
    example_input={
        "tempBlobUuid": _IMAGE_BLOB_UUID,
        # A 1x1 PNG.
        "contentBase64": (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJ"
            "RU5ErkJggg=="
        ),
        "contentType": "image/png",
    },
    example_output={"tempBlobUuid": _IMAGE_BLOB_UUID, "url": _IMAGE_BLOB_URL},
    tags=("media",),
)


CREATE_DRAFT = f.render_procedure(
    name="create-draft",
    summary="Renders a page and stores it as a draft in the gallery, without posting it.",
    doc=(
        "Renders the page and stores the result as a draft in the gallery; nothing is "
        "posted. Rendering starts at once: the draft is `rendering`, then `ready` with a "
        "`previewUrl` (usually within a minute) or `failed`; poll `status-draft`. "
        "`editorUrl` opens the draft in the editor (it needs a login to the workspace).\n\n"
        f"{f.RENDER_INPUT_DOC} The draft is created anyway.\n\n"
        f"{f.VIDEO_DOC.format(duration='at most 60 seconds long')}\n\n"
        "`name` defaults to `api-story`; `folderName` is a top-level gallery folder, "
        "created if missing (when omitted, the draft is at the top level).\n\n"
        f"{f.MENTION_BUSY_DOC}\n\n"
        "**Quota:** 100 drafts per organization in any rolling 24 hours; deleted drafts "
        "count. The call past it is answered with HTTP 429, `errorCode` `QUOTA_EXCEEDED` and "
        "a `Retry-After` header (seconds until the oldest draft of the window leaves it); "
        "nothing is stored. A repeat of an existing `draftUuid` never counts.\n\n"
        f"{f.RETRY_DOC}"
    ),
    properties={
        "draftUuid": f.caller_uuid("draft"),
        "name": f.string(
            "Name of the draft in the gallery (default `api-story`).",
            min_length=1,
            max_length=200,
        ),
        "folderName": f.string(
            "Top-level gallery folder, created if missing; omitted means the top level.",
            min_length=1,
            max_length=512,
        ),
    },
    required=("draftUuid",),
    output_schema=f.uuid_output(
        "draftUuid",
        "draft",
        {
            "editorUrl": f.link("Opens the draft in the editor (needs a workspace login)."),
            "warnings": f.warnings(),
        },
        ("editorUrl",),
    ),
    example_input={
        "draftUuid": _DRAFT_UUID,
        "html": f.EXAMPLE_IMAGE_STORY_HTML,
        "name": "Summer sale - day 1",
        "folderName": "Campaigns 2026",
    },
    example_output={"draftUuid": _DRAFT_UUID, "editorUrl": _DRAFT_EDITOR_URL},
    tags=_DRAFT.tags,
)

STATUS_DRAFT = f.uuid_procedure(
    _DRAFT,
    name="status-draft",
    summary="Returns the status, preview and editor link of a draft.",
    doc=(
        "Returns where a draft stands: `rendering` (rendering started), `ready` (rendered; "
        "`previewUrl` present), `failed` (rendering failed for good: delete it and create "
        "it again) or `deleted`. `previewUrl` is a JPEG of the rendering (the full-size "
        "image for image designs, a 360x640 first frame for video designs). `editorUrl` is "
        "absent once the draft is deleted. `previewUrl` is a download URL valid for one hour: "
        "call `status-draft` again for a fresh one.\n\n"
        "When a user edited the draft in the editor, the status, `previewUrl` and "
        "`editorUrl` are those of the latest saved version."
    ),
    properties={
        "status": f.standing("draft", f.DRAFT_STATUSES),
        "previewUrl": f.link(
            "JPEG preview (download URL valid for one hour); present once `ready`."
        ),
        "editorUrl": f.link("Opens the draft in the editor; absent when deleted."),
    },
    example_output={
        "status": "ready",
        "previewUrl": _DRAFT_PREVIEW_URL,
        "editorUrl": _DRAFT_EDITOR_URL,
    },
)

DELETE_DRAFT = f.final_status_procedure(
    _DRAFT,
    name="delete-draft",
    summary="Deletes a draft from the gallery.",
    doc=(
        "Deletes a draft (`rendering`, `ready` or `failed`); when a user edited it, the "
        "latest saved version is deleted. The answer's `status` is always `deleted`.\n\n"
        "**Idempotency:** deleting an already deleted draft succeeds again.\n\n"
        "**Errors:** when a user already scheduled or posted the draft in the app, an "
        "expected error (HTTP 400) is returned and the draft is unchanged: cancel the post "
        "in the app first. A deleted draft still counts for the draft quota."
    ),
    final="deleted",
)

PROCEDURES: tuple[Procedure, ...] = (
    CREATE_TEMP_BLOB_UPLOAD_URL,
    UPLOAD_TEMP_BLOB,
    CREATE_DRAFT,
    STATUS_DRAFT,
    DELETE_DRAFT,
)
