"""In-memory stand-ins for account-svc, render-svc and a platform driver."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from publish_svc.drivers.base import Credentials, Driver, Media, Outcome, Progress
from publish_svc.model import Kind, Post
from publish_svc.post_params import ClipappParams, Params, ReelParams, SocialParams, StoryParams
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.errors import InvalidArgument


def params(kind: Kind, **fields: Any) -> Params:
    """A kind's params as the servicer makes them from a request with these fields (a social
    post's `options` as a dict, and its `post_type` as the intake adds it)."""
    if kind is Kind.STORY:
        return StoryParams.of_request(pb.ScheduleStoryRequest(**fields))
    if kind is Kind.REEL:
        return ReelParams.of_request(pb.ScheduleReelRequest(**fields))
    if kind is Kind.CLIPAPP:
        return ClipappParams.of_request(pb.ScheduleClipappPostRequest(**fields))
    post_type = fields.pop("post_type", None)
    options = json.dumps(fields.pop("options", {}))
    social = SocialParams.of_request(pb.ScheduleSocialPostRequest(options_json=options, **fields))
    return replace(social, post_type=post_type)


def photoapp_account(username: str = "alice", disconnected: bool = False) -> apb.ConnectedAccount:
    return apb.ConnectedAccount(
        social_account_id=f"sa_{username}",
        organization_id="org",
        platform="PHOTOAPP",
        connection=apb.CONNECTION_DIRECT,
        platform_account_id=f"1784{abs(hash(username)) % 10**13:013d}",
        username=username,
        disconnected=disconnected,
        linknet_destinations=[apb.LinknetDestination(id="77", name="Page", type="page")],
    )


def social_account(platform: str = "LINKNET") -> apb.ConnectedAccount:
    return apb.ConnectedAccount(
        social_account_id="sa_social",
        organization_id="org",
        platform=platform,
        connection=apb.CONNECTION_SOCIAL,
        platform_account_id="555",
        username="brand",
        post_types=[
            apb.PostType(
                post_type="IMAGE_POST",
                procedure="schedule-social-post",
                media="image",
                caption_published=True,
                max_caption_length=10,
                options={
                    "visibility": apb.PostTypeOption(
                        type="string",
                        enum_values=[],
                    ),
                    "notify": apb.PostTypeOption(type="boolean"),
                },
            )
        ],
        daily_post_limit=50,
    )


@dataclass
class FakeAccounts:
    accounts: dict[str, apb.ConnectedAccount] = field(default_factory=dict)
    balance: int = 10
    daily_full: bool = False
    consumed: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    disconnected: list[str] = field(default_factory=list)
    # ConsumeCredit raises (account-svc unreachable), as many times as this says.
    consume_failures: int = 0
    consume_calls: int = 0
    # ReleaseDailyPost raises (account-svc unreachable), as many times as this says.
    release_failures: int = 0

    async def connected(
        self, organization_id: str, ref: apb.AccountRef, what: str
    ) -> apb.ConnectedAccount:
        key = (
            ref.platform_username.username
            if ref.HasField("platform_username")
            else ref.clipapp_account_id or ref.social_account_id
        )
        account = self.accounts.get(key)
        if account is None:
            raise InvalidArgument(f"{what} is not connected to this organization")
        if account.disconnected:
            raise InvalidArgument(f"{what} is disconnected: reconnect it in the app")
        return account

    async def access_token(
        self, organization_id: str, social_account_id: str, *, force_refresh: bool = False
    ) -> apb.AccessToken:
        return apb.AccessToken(access_token="tok", platform_account_id="1", username="u")

    async def mark_disconnected(
        self, organization_id: str, social_account_id: str, reason: str
    ) -> None:
        self.disconnected.append(social_account_id)

    async def reserve_daily(
        self, organization_id: str, social_account_id: str, key: str, day: datetime
    ) -> apb.DailyPostReservation:
        return apb.DailyPostReservation(
            reserved=not self.daily_full,
            day=day.date().isoformat(),
            limit=50,
            used=50 if self.daily_full else 1,
        )

    async def release_daily(
        self, organization_id: str, social_account_id: str, key: str, day: datetime
    ) -> None:
        if self.release_failures > 0:
            self.release_failures -= 1
            raise ConnectionError("account-svc is unreachable")
        self.released.append(key)

    async def credits(self, organization_id: str) -> int:
        return self.balance

    async def consume_credit(self, organization_id: str, key: str) -> bool:
        self.consume_calls += 1
        if self.consume_failures > 0:
            self.consume_failures -= 1
            raise ConnectionError("account-svc is unreachable")
        if key not in self.consumed:
            if self.balance <= 0:
                return False  # as account-svc: nothing taken, a later take may succeed
            self.consumed.append(key)
            self.balance -= 1
        return True


@dataclass
class FakeRenderer:
    media_kind: rpb.MediaKind.ValueType = rpb.MEDIA_KIND_IMAGE
    warnings: list[str] = field(default_factory=list)
    state: rpb.RenderingState.ValueType = rpb.RENDERING_STATE_FINISHED
    refuse: str | None = None
    prepared: list[str] = field(default_factory=list)
    # Renderings read (GetRendering), in order.
    read: list[str] = field(default_factory=list)

    async def prepare(
        self, organization_id: str, rendering_id: str, design: rpb.Design, kind: Any, **_: float
    ) -> rpb.Rendering:
        if self.refuse:
            raise InvalidArgument(self.refuse)
        self.prepared.append(rendering_id)
        return rpb.Rendering(
            rendering_id=rendering_id,
            state=rpb.RENDERING_STATE_PREPARED,
            media_kind=self.media_kind,
            warnings=self.warnings,
            stickers=[
                rpb.Sticker(
                    kind="hashtag", attributes={"hashtag": "x"}, x=1, y=2, width=3, height=4
                )
            ],
            duration_seconds=5.0,
        )

    async def finish(self, organization_id: str, rendering_id: str) -> rpb.Rendering:
        return rpb.Rendering(rendering_id=rendering_id, state=rpb.RENDERING_STATE_FINISHING)

    async def get(self, organization_id: str, rendering_id: str) -> rpb.Rendering:
        self.read.append(rendering_id)
        return rpb.Rendering(
            rendering_id=rendering_id,
            state=self.state,
            media_kind=self.media_kind,
            media_url=f"http://media/{rendering_id}.jpg",
            preview_url=f"http://media/{rendering_id}-preview.jpg",
        )


@dataclass
class ScriptedDriver:
    """Answers the outcomes given, in order (the last one repeats)."""

    outcomes: list[Outcome] = field(default_factory=lambda: [Outcome.executed("m1")])
    calls: list[str] = field(default_factory=list)
    seen_progress: list[Mapping[str, Any]] = field(default_factory=list)
    record_first: dict[str, Any] | None = None
    reachable_answer: bool = True
    # Whether each call is marked irreversible (sent) before it answers; a driver refused
    # before its publishing call (a token refused at the first step) does not mark it.
    sends: bool = True

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        self.calls.append(post.id)
        self.seen_progress.append(dict(progress.recorded))
        if self.record_first:
            await progress.record(**self.record_first)
        if self.sends:
            await progress.irreversible()
        outcome = self.outcomes[min(len(self.calls) - 1, len(self.outcomes) - 1)]
        return outcome

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        return self.reachable_answer


@dataclass
class OneDriver:
    driver: Driver

    def get(self, platform: str) -> Driver:
        return self.driver
