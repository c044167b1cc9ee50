"""The account listings over HTTP: each output validates against its catalog schema, accounts
of every platform appear as documented, and organizations never see each other's accounts."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from edge.catalog import build_catalog
from storypost.testing.stack import StackHandle
from tests.support.accounts import connect_account
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration


def check_output(procedure: str, body: dict[str, Any]) -> None:
    proc = build_catalog().get(procedure)
    assert proc is not None
    validator = jsonschema.Draft202012Validator(
        dict(proc.output_schema), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]
    assert errors == [], errors


async def listing(api: Api, org: Org, procedure: str) -> dict[str, Any]:
    answer = await api.call(org, procedure, {})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    check_output(procedure, body)
    return body


async def test_every_listing_validates_against_its_catalog_schema(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    for procedure, key in (
        ("list-photoapp-users", "photoappUsers"),
        ("list-clipapp-accounts", "clipappAccounts"),
        ("list-social-accounts", "socialAccounts"),
    ):
        assert (await listing(api, fresh_org, procedure))[key] == []
    photo = await connect_account(
        storypost_stack, fresh_org, "photoapp", "listing.shop",
        linknet_destinations=["1098:Listing Shop:page", "2001:Fans: the group:group"],
    )  # fmt: skip
    await connect_account(storypost_stack, fresh_org, "photoapp", "listing.outlet")
    clip = await connect_account(storypost_stack, fresh_org, "clipapp", "listing.clips")
    clip_social = await connect_account(
        storypost_stack, fresh_org, "clipapp", "listing.clips", connection="social"
    )
    channel = await connect_account(
        storypost_stack, fresh_org, "videochannel", "listing.tv", connection="direct"
    )
    for platform in ("linknet", "pronet", "pinboard", "ephemeral", "shorttext", "microblog"):
        await connect_account(storypost_stack, fresh_org, platform, f"listing.{platform}")

    users = (await listing(api, fresh_org, "list-photoapp-users"))["photoappUsers"]
    assert users == [
        {
            "photoappId": photo.platform_account_id,
            "photoappUsername": "listing.shop",
            "linknetDestinations": [
                {
                    "linknetDestinationId": "1098",
                    "linknetDestinationName": "Listing Shop",
                    "linknetDestinationType": "page",
                },
                {
                    "linknetDestinationId": "2001",
                    "linknetDestinationName": "Fans: the group",
                    "linknetDestinationType": "group",
                },
            ],
        },
        {"photoappId": users[1]["photoappId"], "photoappUsername": "listing.outlet"},
    ]
    clips = (await listing(api, fresh_org, "list-clipapp-accounts"))["clipappAccounts"]
    assert [(c["clipappAccountId"], c["clipappAccountName"]) for c in clips] == [
        (clip.platform_account_id, "listing.clips")
    ]
    assert clips[0]["profilePictureUrl"].startswith("http://127.0.0.1:")

    social = (await listing(api, fresh_org, "list-social-accounts"))["socialAccounts"]
    assert [(s["platform"], s["connection"]) for s in social] == [
        ("PHOTOAPP", "direct"),
        ("PHOTOAPP", "direct"),
        ("CLIPAPP", "direct"),
        ("CLIPAPP", "social"),
        ("VIDEOCHANNEL", "direct"),
        ("LINKNET", "social"),
        ("PRONET", "social"),
        ("PINBOARD", "social"),
        ("EPHEMERAL", "social"),
        ("SHORTTEXT", "social"),
        ("MICROBLOG", "social"),
    ]
    by_id = {s["socialAccountId"]: s for s in social}
    assert not any(s["disconnected"] for s in social)
    photo_entry = by_id[photo.social_account_id]
    assert photo_entry["photoappUsername"] == "listing.shop"
    assert len(photo_entry["linknetDestinations"]) == 2
    assert "dailyPostLimit" not in photo_entry
    assert [p["postType"] for p in photo_entry["postTypes"]] == [
        "IMAGE_STORY",
        "VIDEO_STORY",
        "REEL",
    ]
    assert {p["procedure"] for p in photo_entry["postTypes"]} == {
        "schedule-photoapp-story",
        "schedule-photoapp-reel",
    }
    # A clipapp account appears twice: direct (clipapp procedures) and social.
    direct, through_social = by_id[clip.social_account_id], by_id[clip_social.social_account_id]
    assert direct["clipappAccountId"] == clip.platform_account_id
    assert "clipappAccountId" not in through_social
    assert {p["procedure"] for p in direct["postTypes"]} == {"schedule-clipapp-post"}
    video = next(p for p in through_social["postTypes"] if p["postType"] == "VIDEO")
    assert video["procedure"] == "schedule-social-post" and video["media"] == "video"
    assert (video["minDurationSeconds"], video["maxDurationSeconds"]) == (3, 600)
    assert video["options"]["privacyLevel"]["enum"][-1] == "SELF_ONLY"
    assert through_social["dailyPostLimit"] == 10
    # A directly connected video channel cannot be posted to yet.
    assert "postTypes" not in by_id[channel.social_account_id]
    limits = {s["platform"]: s.get("dailyPostLimit") for s in social}
    assert limits == {
        "PHOTOAPP": None, "CLIPAPP": 10, "VIDEOCHANNEL": 10, "LINKNET": 50, "PRONET": 18,
        "PINBOARD": 24, "EPHEMERAL": 20, "SHORTTEXT": 200, "MICROBLOG": 15,
    }  # fmt: skip
    microblog = next(s for s in social if s["platform"] == "MICROBLOG")
    assert all(p["captionRequired"] for p in microblog["postTypes"])
    # Tokens never appear in a listing.
    assert "sbxat." not in str(social) and "sbxrt." not in str(social)


async def test_organizations_never_see_each_others_accounts(
    api: Api, storypost_stack: StackHandle
) -> None:
    org_a = await api.admin.create_org("accounts A")
    org_b = await api.admin.create_org("accounts B")
    mine = await connect_account(storypost_stack, org_a, "photoapp", "isolated.a")
    await connect_account(storypost_stack, org_a, "pinboard", "isolated.pins")
    for procedure, key in (
        ("list-photoapp-users", "photoappUsers"),
        ("list-clipapp-accounts", "clipappAccounts"),
        ("list-social-accounts", "socialAccounts"),
    ):
        assert (await listing(api, org_b, procedure))[key] == []
    # A's token on B's base URL is refused.
    crossed = await api.call(org_b, "list-social-accounts", {}, token=org_a.token)
    assert crossed.status_code == 401
    # B connecting the same photoapp user gets its own connection; A's list is unchanged.
    theirs = await connect_account(storypost_stack, org_b, "photoapp", "isolated.a")
    assert theirs.social_account_id != mine.social_account_id
    a_social = (await listing(api, org_a, "list-social-accounts"))["socialAccounts"]
    b_social = (await listing(api, org_b, "list-social-accounts"))["socialAccounts"]
    assert {s["socialAccountId"] for s in a_social} & {
        s["socialAccountId"] for s in b_social
    } == set()
    assert [s["socialAccountId"] for s in b_social] == [theirs.social_account_id]
