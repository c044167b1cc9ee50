"""The stored post record: the intake builds a `Post`, `Post.to_doc` writes it (the inverse of
`Post.from_doc`) and the store adds its own fields. The records of a fresh story, social post
and series occurrence are pinned here byte for byte (BSON: names, order, values, types), as
the intake stored them when it built the record as a plain document."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import bson
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from publish_svc.model import (
    RENDERING_FIELD,
    SERIES_FIELD,
    TRACEPARENT_FIELD,
    AccountInfo,
    Kind,
    Post,
    Status,
)
from publish_svc.post_params import LinknetDestination, StoryParams
from storypost_runtime.mongo import Document
from storypost_runtime.tracing import tracer
from tests.unit.publish.conftest import START, Core
from tests.unit.publish.fakes import photoapp_account, social_account

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# FakeRenderer's sticker, as stored.
BOX = {"x": 1.0, "y": 2.0, "width": 3.0, "height": 4.0}
STICKER = {"kind": "hashtag", "attributes": {"hashtag": "x"}, **BOX}
ALICE = photoapp_account("alice")
STORY_EVENT = "photoapp_story_post.status_changed"
ALICE_DOC = {
    "socialAccountId": "sa_alice",
    "platform": "PHOTOAPP",
    "platformAccountId": ALICE.platform_account_id,
    "username": "alice",
}
OPTIONAL = (
    "renderError",
    "errorMessage",
    "permalink",
    "previewUrl",
    "clipappStatus",
    "platformPostId",
    "finishedAt",
    "leaseOwner",
    SERIES_FIELD,
    RENDERING_FIELD,
    TRACEPARENT_FIELD,
)


async def _stored(core: Core, record_id: str) -> Document:
    doc = await core.db["posts"].find_one({"_id": record_id})
    assert doc is not None
    return doc


def _fresh(
    kind: str, uuid: str, status: str, account: Document, params: Document, date: datetime | None
) -> Document:
    """The fields of a post as first stored (with FakeRenderer's rendering), up to its
    optional ones; a date given here is in the future."""
    return {
        "_id": f"{kind}:org:{uuid}",
        "organizationId": "org",
        "kind": kind,
        "postUuid": uuid,
        "status": status,
        "account": account,
        "params": params,
        "date": date,
        "dueAt": date or START,
        "futureDate": date is not None,
        "media": "image",
        "durationSeconds": 5.0,
        "warnings": [],
        "stickers": [STICKER],
        "renderState": "prepared",
        "createdAt": START,
        "updatedAt": START,
        "attempts": 0,
        "progress": {},
    }


def _record(
    stored: Document, post: Document, listed_at: datetime, event: dict[str, Any]
) -> Document:
    """The whole record expected: the post's fields, then the store's, then its one event
    (its id is random: the stored one)."""
    return {
        **post,
        "listedAt": listed_at,
        "leaseUntil": NEVER,
        "phase": None,
        "outbox": [
            {
                "id": stored["outbox"][0]["id"],
                "type": event.pop("type"),
                "organizationId": "org",
                "occurredAt": START,
                "data": event,
                "requestId": None,
            }
        ],
        "outboxPending": True,
    }


def _same_bytes(stored: Document, expected: Document) -> None:
    assert stored == expected
    assert list(stored) == list(expected)
    assert bson.encode(stored) == bson.encode(expected)


async def test_a_dated_story_is_stored_field_for_field_as_before(core: Core) -> None:
    uuid = "6f1c1f9e-0000-4000-8000-000000000001"
    date = START + timedelta(minutes=30)
    new = core.new(Kind.STORY, uuid.upper(), date, share_to_linknet=True)
    accepted = await core.intake.story(new, "alice")
    stored = await _stored(core, accepted.post.id)
    params = {
        "aiGenerated": False,
        "shareToLinknet": True,
        "linknetDestination": {"id": "77", "name": "Page", "type": "page"},
        "photoappUsername": "alice",
    }
    post = _fresh("story", uuid, "scheduled", ALICE_DOC, params, date)
    event = {"type": STORY_EVENT, "storyPostUuid": uuid, "status": "scheduled"}
    _same_bytes(stored, _record(stored, post, date, event))
    assert Post.from_doc(stored) == accepted.post


async def test_a_social_post_without_date_is_stored_field_for_field_as_before(
    core: Core,
) -> None:
    uuid = "9a0e7c52-0000-4000-8000-000000000002"
    new = core.new(Kind.SOCIAL, uuid, text="hello")
    accepted = await core.intake.social(new, "sa_social", "IMAGE_POST")
    stored = await _stored(core, accepted.post.id)
    account = social_account()
    account_doc = {
        "socialAccountId": account.social_account_id,
        "platform": account.platform,
        "platformAccountId": account.platform_account_id,
        "username": account.username,
    }
    params = {"text": "hello", "options": {}, "postType": "IMAGE_POST"}
    post = _fresh("social", uuid, "in-progress", account_doc, params, None)
    event = {
        "type": "social_post.status_changed",
        "socialPostUuid": uuid,
        "status": "in-progress",
        "socialAccountId": "sa_social",
        "platform": "LINKNET",
    }
    _same_bytes(stored, _record(stored, post, START, event))
    assert Post.from_doc(stored) == accepted.post


async def test_a_series_occurrence_stores_its_series_rendering_and_trace(
    core: Core, traces: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, _ = traces
    uuid = "bc604f8c-0000-4000-8000-000000000003"
    series = "5e61e5a1-0000-4000-8000-000000000004"
    rendering = "story:org:bc604f8c-0000-4000-8000-000000000000"
    date = START + timedelta(days=1)
    new = replace(core.new(Kind.STORY, uuid, date), series_uuid=series, rendering_id=rendering)
    with tracer(provider).start_as_current_span("ScheduleStory"):
        accepted = await core.intake.story(new, "alice")
    stored = await _stored(core, accepted.post.id)
    traceparent = accepted.post.traceparent
    assert traceparent is not None
    params = {"aiGenerated": False, "shareToLinknet": False, "photoappUsername": "alice"}
    post = {
        **_fresh("story", uuid, "scheduled", ALICE_DOC, params, date),
        # A reused rendering is read (GetRendering), not prepared: no duration, no stickers.
        "durationSeconds": 0.0,
        "stickers": [],
        "seriesUuid": series,
        "renderingId": rendering,
        "traceparent": traceparent,
    }
    event = {"type": STORY_EVENT, "storyPostUuid": uuid, "status": "scheduled"}
    expected = _record(stored, post, date, event)
    expected["outbox"][0]["traceparent"] = traceparent
    _same_bytes(stored, expected)
    assert Post.from_doc(stored) == accepted.post
    assert accepted.post.rendering_id == rendering


def _full_post() -> Post:
    """A post with every optional field set, as one is once it ended."""
    at = START + timedelta(minutes=7)
    return Post(
        id="story:org:u1",
        organization_id="org",
        kind=Kind.STORY,
        post_uuid="u1",
        status=Status.EXECUTED,
        account=AccountInfo("sa_alice", "PHOTOAPP", ALICE.platform_account_id, "alice"),
        params=StoryParams(
            ai_generated=True,
            share_to_linknet=True,
            linknet_destination_id="77",
            linknet_destination=LinknetDestination("77", "Page", "page"),
            photoapp_username="alice",
        ),
        date=START,
        due_at=at,
        future_date=True,
        media="video",
        warnings=["a warning"],
        stickers=[STICKER],
        created_at=START,
        duration_seconds=12.5,
        updated_at=at,
        attempts=2,
        error_message="an error",
        permalink="http://sandbox/p/1",
        preview_url="http://media/p.jpg",
        clipapp_status="PUBLISHED",
        platform_post_id="m1",
        finished_at=at,
        progress={"containerId": "c1", "irreversible": True},
        render_state="finished",
        render_error="a render error",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        lease_holder="replica-a:1",
        series_uuid="s1",
        reused_rendering="story:org:u0",
    )


def test_to_doc_is_the_inverse_of_from_doc_with_every_field_set() -> None:
    post = _full_post()
    doc = post.to_doc()
    assert Post.from_doc(doc) == post
    assert set(OPTIONAL) <= set(doc)
    assert Post.from_doc(doc).to_doc() == doc


def test_to_doc_stores_an_optional_field_only_when_it_is_set() -> None:
    post = replace(
        _full_post(),
        error_message=None,
        permalink=None,
        preview_url=None,
        clipapp_status=None,
        platform_post_id=None,
        finished_at=None,
        render_error=None,
        traceparent=None,
        lease_holder=None,
        series_uuid=None,
        reused_rendering=None,
        updated_at=None,
    )
    doc = post.to_doc()
    assert not set(doc) & {*OPTIONAL, "updatedAt"}
    assert doc["date"] == START  # the date is always stored (None when none was given)
    assert Post.from_doc(doc) == post
