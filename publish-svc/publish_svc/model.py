"""Post kinds, statuses and the stored post record."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from publish_svc.post_params import Params, params_doc, params_from_doc
from storypost_runtime.mongo import Document
from storypost_runtime.vocabulary import (
    EVENT_TYPES,
    FINAL_STATUSES,
    OPEN_STATUSES,
    PostKind,
    PostStatus,
)

# The words are the product's (storypost_runtime.vocabulary); these names are publish-svc's.
Kind = PostKind
Status = PostStatus

# The W3C traceparent of the schedule call (optional: records of calls made with tracing off,
# or before it was stored, have none).
TRACEPARENT_FIELD = "traceparent"
# The series a post belongs to (its UUID), and the rendering it reuses (absent: its own, named
# by the post's id), when it is an occurrence of a series (publish_svc/series.py).
SERIES_FIELD = "seriesUuid"
RENDERING_FIELD = "renderingId"

FINAL = FINAL_STATUSES
OPEN = tuple(status.value for status in OPEN_STATUSES)

# The status event each kind emits on the bus.
EVENT_TYPE = {kind: event.name for kind, event in EVENT_TYPES.items()}
# The UUID field name of each kind in the API and in events.
UUID_FIELD = {
    Kind.STORY: "storyPostUuid",
    Kind.REEL: "reelPostUuid",
    Kind.CLIPAPP: "clipappPostUuid",
    Kind.SOCIAL: "socialPostUuid",
}


def listed_at(date: datetime | None, created_at: datetime) -> datetime:
    """Where a post is listed: its date, or when it was accepted if it came without one."""
    return date or created_at


def post_id(kind: Kind, organization_id: str, post_uuid: str) -> str:
    """One record per (organization, kind, UUID): the id itself makes creates idempotent."""
    return f"{kind.value}:{organization_id}:{post_uuid.lower()}"


@dataclass(frozen=True)
class AccountInfo:
    """The connected account a post goes to, as resolved when it was scheduled."""

    social_account_id: str
    platform: str
    platform_account_id: str
    username: str

    def to_doc(self) -> Document:
        return {
            "socialAccountId": self.social_account_id,
            "platform": self.platform,
            "platformAccountId": self.platform_account_id,
            "username": self.username,
        }

    @classmethod
    def from_doc(cls, doc: Document) -> AccountInfo:
        return cls(
            doc["socialAccountId"], doc["platform"], doc["platformAccountId"], doc["username"]
        )


@dataclass(frozen=True)
class Post:
    """A stored post; `params` holds the kind's own request fields (publish_svc.post_params)."""

    id: str
    organization_id: str
    kind: Kind
    post_uuid: str
    status: Status
    account: AccountInfo
    params: Params
    date: datetime | None
    due_at: datetime
    # The caller gave a date in the future (social posts send no in-progress event then).
    future_date: bool
    media: str
    warnings: list[str]
    stickers: list[dict[str, Any]]
    created_at: datetime
    # The rendering's length (0 for an image), as render-svc measured it when it was accepted.
    duration_seconds: float = 0.0
    # When the record last changed (every stored one has it; None only on a hand-made Post).
    updated_at: datetime | None = None
    attempts: int = 0
    error_message: str | None = None
    permalink: str | None = None
    preview_url: str | None = None
    clipapp_status: str | None = None
    platform_post_id: str | None = None
    finished_at: datetime | None = None
    # What the driver recorded of an attempt (container or publish ids, phase).
    progress: dict[str, Any] = field(default_factory=dict)
    render_state: str = "prepared"
    render_error: str | None = None
    traceparent: str | None = None
    # Who holds the post's lease: the attempt that claimed it (see scheduler.py).
    lease_holder: str | None = None
    # The series it belongs to (ListPosts filters on it).
    series_uuid: str | None = None
    # The rendering it posts, when it reuses another post's (None: its own, under its id).
    reused_rendering: str | None = None

    @property
    def rendering_id(self) -> str:
        """The id of the rendering render-svc holds for it."""
        return self.reused_rendering or self.id

    @property
    def deadline_base(self) -> datetime:
        """The 60-minute window counts from the date, or from acceptance when none was given."""
        return self.date or self.created_at

    @property
    def listed_at(self) -> datetime:
        """Where ListPosts and the calendar place it (Post.date in the API)."""
        return listed_at(self.date, self.created_at)

    def to_doc(self) -> Document:
        """The stored record of the post: the one place its shape is written, the inverse of
        `from_doc` (an optional field is stored only when set), its fields in the order records
        always had. The store adds its own fields to a new record (records.PostStore.insert:
        listedAt, the lease, the outbox)."""
        doc: Document = {
            "_id": self.id,
            "organizationId": self.organization_id,
            "kind": self.kind.value,
            "postUuid": self.post_uuid,
            "status": self.status.value,
            "account": self.account.to_doc(),
            "params": params_doc(self.params),
            "date": self.date,
            "dueAt": self.due_at,
            "futureDate": self.future_date,
            "media": self.media,
            "durationSeconds": self.duration_seconds,
            "warnings": list(self.warnings),
            "stickers": list(self.stickers),
            "renderState": self.render_state,
        }
        _set(doc, "renderError", self.render_error)
        doc["createdAt"] = self.created_at
        _set(doc, "updatedAt", self.updated_at)
        doc["attempts"] = self.attempts
        doc["progress"] = dict(self.progress)
        _set(doc, "errorMessage", self.error_message)
        _set(doc, "permalink", self.permalink)
        _set(doc, "previewUrl", self.preview_url)
        _set(doc, "clipappStatus", self.clipapp_status)
        _set(doc, "platformPostId", self.platform_post_id)
        _set(doc, "finishedAt", self.finished_at)
        _set(doc, "leaseOwner", self.lease_holder)
        _set(doc, SERIES_FIELD, self.series_uuid)
        _set(doc, RENDERING_FIELD, self.reused_rendering)
        _set(doc, TRACEPARENT_FIELD, self.traceparent)
        return doc

    @classmethod
    def from_doc(cls, doc: Document) -> Post:
        kind = Kind(doc["kind"])
        return cls(
            id=doc["_id"],
            organization_id=doc["organizationId"],
            kind=kind,
            post_uuid=doc["postUuid"],
            status=Status(doc["status"]),
            account=AccountInfo.from_doc(doc["account"]),
            params=params_from_doc(kind, doc["params"]),
            date=doc.get("date"),
            due_at=doc["dueAt"],
            future_date=bool(doc.get("futureDate")),
            media=doc.get("media", "image"),
            warnings=list(doc.get("warnings") or []),
            stickers=list(doc.get("stickers") or []),
            created_at=doc["createdAt"],
            duration_seconds=float(doc.get("durationSeconds", 0.0)),
            updated_at=doc.get("updatedAt"),
            attempts=int(doc.get("attempts", 0)),
            error_message=doc.get("errorMessage"),
            permalink=doc.get("permalink"),
            preview_url=doc.get("previewUrl"),
            clipapp_status=doc.get("clipappStatus"),
            platform_post_id=doc.get("platformPostId"),
            finished_at=doc.get("finishedAt"),
            progress=dict(doc.get("progress") or {}),
            render_state=doc.get("renderState", "prepared"),
            render_error=doc.get("renderError"),
            traceparent=doc.get(TRACEPARENT_FIELD),
            lease_holder=doc.get("leaseOwner"),
            series_uuid=doc.get(SERIES_FIELD),
            reused_rendering=doc.get(RENDERING_FIELD),
        )


def _set(doc: Document, name: str, value: object) -> None:
    """Stores an optional field only when it is set."""
    if value is not None:
        doc[name] = value
