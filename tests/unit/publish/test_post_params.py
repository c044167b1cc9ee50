"""Each kind's typed params: stored exactly as the untyped `params` dicts were (same keys,
same optional keys present or absent, same values), read back unchanged, defaults applied
once (when the schedule request is read)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import publish_svc
from publish_svc.model import Kind
from publish_svc.post_params import ClipappParams, ReelParams, params_doc, params_from_doc
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.mongo import Document
from tests.unit.publish.conftest import Core

UUID = "2b7c1d0e-5a4f-4e3b-9c8d-7f6e5d4c3b2a"
DESIGN = rpb.Design(html="<p>hi</p>")
CLIPAPP_ACCOUNT = apb.ConnectedAccount(
    social_account_id="sa_clip",
    platform="CLIPAPP",
    connection=apb.CONNECTION_DIRECT,
    platform_account_id="7001",
    username="clipper",
)

# What the untyped code stored for these requests (servicer dict + intake's additions).
STORY_SHARED: Document = {
    "aiGenerated": True,
    "shareToLinknet": True,
    "linknetDestinationId": "77",
    "linknetDestination": {"id": "77", "name": "Page", "type": "page"},
    "photoappUsername": "alice",
}
STORY_PLAIN: Document = {"aiGenerated": False, "shareToLinknet": False, "photoappUsername": "alice"}
REEL_TOLD: Document = {
    "caption": "hi",
    "shareToFeed": True,
    "aiGenerated": False,
    "shareToLinknet": False,
    "photoappUsername": "alice",
}
# shareToLinknet unset: the old intake added the default after photoappUsername.
REEL_DEFAULTED: Document = {
    "caption": "",
    "shareToFeed": False,
    "aiGenerated": False,
    "photoappUsername": "alice",
    "shareToLinknet": True,
}
CLIPAPP_FULL: Document = {
    "title": "t",
    "description": "d",
    "privacyLevel": "PUBLIC_TO_EVERYONE",
    "disableDuet": True,
    "disableComment": False,
    "disableStitch": True,
    "brandOrganic": True,
    "brandedContent": False,
    "aiGenerated": True,
    "autoAudio": False,
    "videoCoverTimestampMs": 1500,
    "clipappAccountId": "7001",
}
CLIPAPP_DEFAULTED: Document = {
    "title": "",
    "description": "",
    "privacyLevel": "SELF_ONLY",
    "disableDuet": False,
    "disableComment": False,
    "disableStitch": False,
    "brandOrganic": False,
    "brandedContent": False,
    "aiGenerated": False,
    "autoAudio": False,
    "clipappAccountId": "7001",
}
SOCIAL: Document = {"text": "hello worl", "options": {"visibility": "x"}, "postType": "IMAGE_POST"}

STORED = [
    (Kind.STORY, STORY_SHARED),
    (Kind.STORY, STORY_PLAIN),
    (Kind.REEL, REEL_TOLD),
    (Kind.REEL, REEL_DEFAULTED),
    (Kind.CLIPAPP, CLIPAPP_FULL),
    (Kind.CLIPAPP, CLIPAPP_DEFAULTED),
    (Kind.SOCIAL, SOCIAL),
]


@pytest.mark.parametrize(("kind", "doc"), STORED)
def test_a_stored_document_reads_back_to_the_same_document(kind: Kind, doc: Document) -> None:
    params = params_from_doc(kind, doc)
    assert params.KIND is kind
    assert params_doc(params) == doc
    if doc is not REEL_DEFAULTED:
        assert list(params_doc(params)) == list(doc)


COMMON: dict[str, Any] = {"organization_id": "org", "design": DESIGN}
STORY = {**COMMON, "story_post_uuid": UUID, "photoapp_username": "alice"}
REEL = {**COMMON, "reel_post_uuid": UUID, "photoapp_username": "alice"}
CLIPAPP = {**COMMON, "clipapp_post_uuid": UUID, "clipapp_account_id": "7001"}
SOCIAL_POST = {**COMMON, "social_post_uuid": UUID, "social_account_id": "sa_social"}
# The schedule call, its request, and what the untyped code stored for it.
SCHEDULED: list[tuple[str, Any, Document]] = [
    (
        "ScheduleStory",
        pb.ScheduleStoryRequest(
            **STORY, ai_generated=True, share_to_linknet=True, linknet_destination_id="77"
        ),
        STORY_SHARED,
    ),
    ("ScheduleStory", pb.ScheduleStoryRequest(**STORY), STORY_PLAIN),
    (
        "ScheduleReel",
        pb.ScheduleReelRequest(**REEL, caption="hi", share_to_feed=True, share_to_linknet=False),
        REEL_TOLD,
    ),
    ("ScheduleReel", pb.ScheduleReelRequest(**REEL), REEL_DEFAULTED),
    (
        "ScheduleClipappPost",
        pb.ScheduleClipappPostRequest(
            **CLIPAPP,
            title="t",
            description="d",
            privacy_level="PUBLIC_TO_EVERYONE",
            disable_duet=True,
            disable_stitch=True,
            brand_organic=True,
            ai_generated=True,
            video_cover_timestamp_ms=1500,
        ),
        CLIPAPP_FULL,
    ),
    ("ScheduleClipappPost", pb.ScheduleClipappPostRequest(**CLIPAPP), CLIPAPP_DEFAULTED),
    (
        "ScheduleSocialPost",
        pb.ScheduleSocialPostRequest(
            **SOCIAL_POST,
            post_type="IMAGE_POST",
            text="hello world",
            options_json='{"visibility": "x"}',
        ),
        SOCIAL,
    ),
]
VIDEO_CALLS = {"ScheduleReel", "ScheduleClipappPost"}


@pytest.mark.parametrize(("rpc", "request_pb", "stored"), SCHEDULED)
async def test_a_schedule_call_stores_what_the_untyped_code_stored(
    core: Core, rpc: str, request_pb: Any, stored: Document
) -> None:
    core.accounts.accounts["7001"] = CLIPAPP_ACCOUNT
    if rpc in VIDEO_CALLS:
        core.renderer.media_kind = rpb.MEDIA_KIND_VIDEO
    schedule: Callable[..., Awaitable[Any]] = getattr(core.servicer(), rpc)
    await schedule(request_pb, None)
    doc = await core.db["posts"].find_one({"postUuid": UUID})
    assert doc is not None
    assert doc["params"] == stored
    if stored is not REEL_DEFAULTED:
        assert list(doc["params"]) == list(stored)


def test_defaults_come_from_the_request_only() -> None:
    # Unset in the request: the default, once, when the request is read.
    assert ReelParams.of_request(pb.ScheduleReelRequest()).share_to_linknet is True
    assert ClipappParams.of_request(pb.ScheduleClipappPostRequest()).privacy_level == "SELF_ONLY"
    # Stored values are read as they are, never defaulted again.
    told = params_from_doc(Kind.REEL, REEL_TOLD)
    assert isinstance(told, ReelParams) and told.share_to_linknet is False
    full = params_from_doc(Kind.CLIPAPP, CLIPAPP_FULL)
    assert isinstance(full, ClipappParams) and full.privacy_level == "PUBLIC_TO_EVERYONE"


@pytest.mark.parametrize(
    "default", ["REEL_SHARE_TO_LINKNET_DEFAULT", "CLIPAPP_DEFAULT_PRIVACY_LEVEL"]
)
def test_publish_svc_applies_each_default_in_one_module(default: str) -> None:
    package = Path(publish_svc.__file__).parent
    users = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if default in path.read_text()
    )
    assert users == ["post_params.py"]
