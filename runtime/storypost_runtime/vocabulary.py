"""The product's words, written once: platforms, post kinds, statuses, status events, clipapp
privacy levels. Every component (account-svc's platform catalog, the edge's JSON Schemas and
app pages, publish-svc's drivers, webhook-svc's subscriptions, the CLI, the sandbox network)
derives its lists from here; `tests/unit/runtime/test_vocabulary.py` fails when one is written out
again anywhere else.

What each platform can post, and its limits, is account-svc's catalog (docs/accounts.md);
this module only names things.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol


@dataclass(frozen=True)
class PlatformName:
    """A platform as every component names it."""

    # Lower case: URL path segments (`/linknet/v1`), CLI choices, sandbox switches.
    key: str
    # What the app shows.
    label: str
    # True for the platforms with a driver of their own (and their own API); the others
    # publish through the social posting API.
    own_api: bool = False

    @property
    def name(self) -> str:
        """Upper case, as the API and account-svc name it (`LINKNET`)."""
        return self.key.upper()


PHOTOAPP = PlatformName("photoapp", "photoapp (stories and reels)", own_api=True)
CLIPAPP = PlatformName("clipapp", "clipapp (short videos)", own_api=True)
VIDEOCHANNEL = PlatformName("videochannel", "video channel")
LINKNET = PlatformName("linknet", "linknet")
PRONET = PlatformName("pronet", "professional network")
PINBOARD = PlatformName("pinboard", "pin board")
EPHEMERAL = PlatformName("ephemeral", "ephemeral chat app")
SHORTTEXT = PlatformName("shorttext", "short-text network")
MICROBLOG = PlatformName("microblog", "microblog")
# In the order the API lists them.
PLATFORMS: tuple[PlatformName, ...] = (
    PHOTOAPP,
    CLIPAPP,
    VIDEOCHANNEL,
    LINKNET,
    PRONET,
    PINBOARD,
    EPHEMERAL,
    SHORTTEXT,
    MICROBLOG,
)
PLATFORM_KEYS: tuple[str, ...] = tuple(p.key for p in PLATFORMS)
PLATFORM_NAMES: tuple[str, ...] = tuple(p.name for p in PLATFORMS)
# The platforms publish-svc reaches through the social posting API.
SOCIAL_API_PLATFORMS: tuple[PlatformName, ...] = tuple(p for p in PLATFORMS if not p.own_api)


class PostKind(StrEnum):
    """The four kinds of post publish-svc keeps."""

    STORY = "story"
    REEL = "reel"
    CLIPAPP = "clipapp"
    SOCIAL = "social"


class PostStatus(StrEnum):
    """A post's status, as the API and the status events spell it."""

    SCHEDULED = "scheduled"
    IN_PROGRESS = "in-progress"
    EXECUTED = "executed"
    FAILED = "failed"
    CANCELED = "canceled"


FINAL_STATUSES = frozenset({PostStatus.EXECUTED, PostStatus.FAILED, PostStatus.CANCELED})
OPEN_STATUSES: tuple[PostStatus, ...] = (PostStatus.SCHEDULED, PostStatus.IN_PROGRESS)
# Ended without being published: what such a post held (a queue's slot) is free again.
UNPUBLISHED_STATUSES: tuple[PostStatus, ...] = (PostStatus.FAILED, PostStatus.CANCELED)
# A story is published in one step: the API never shows it in progress (spec).
STORY_STATUSES: tuple[PostStatus, ...] = tuple(
    s for s in PostStatus if s is not PostStatus.IN_PROGRESS
)


class SeriesStatus(StrEnum):
    """A series of recurring posts' status, as status-series spells it."""

    ACTIVE = "active"
    FINISHED = "finished"
    CANCELED = "canceled"


class DraftStatus(StrEnum):
    """A draft's status, as the API spells it."""

    RENDERING = "rendering"
    READY = "ready"
    FAILED = "failed"
    DELETED = "deleted"


def proto_name(prefix: str, word: StrEnum) -> str:
    """The proto enum value a word maps to: `POST_STATUS_IN_PROGRESS` for
    (`POST_STATUS`, PostStatus.IN_PROGRESS); the protos name them after these words."""
    return f"{prefix}_{word.name}"


class ProtoEnum[V](Protocol):
    """A generated proto enum (`publish_pb2.PostStatus`): its values by name."""

    def Value(self, name: str) -> V: ...


@dataclass(frozen=True)
class ProtoWords[V]:
    """A vocabulary's words and the proto enum named after them, both ways from one table:
    `pb["in-progress"]` is `POST_STATUS_IN_PROGRESS`, `word[POST_STATUS_IN_PROGRESS]` the
    word. The edge and the services map statuses through one of these (`POST_STATUSES`,
    `DRAFT_STATUSES` beside the code that speaks each proto)."""

    pb: Mapping[str, V]
    word: Mapping[V, str]

    @classmethod
    def of(cls, enum: ProtoEnum[V], prefix: str, words: Iterable[StrEnum]) -> ProtoWords[V]:
        numbers = {word.value: enum.Value(proto_name(prefix, word)) for word in words}
        return cls(numbers, {number: word for word, number in numbers.items()})


@dataclass(frozen=True)
class EventType:
    """The status event a kind of post emits (on the bus, and to webhooks)."""

    name: str
    # What the app's webhooks page shows.
    label: str
    # The spec's two events go to every webhook URL that names none; the others only to
    # URLs that ask for them.
    by_default: bool


EVENT_TYPES: dict[PostKind, EventType] = {
    PostKind.STORY: EventType("photoapp_story_post.status_changed", "Story posts", True),
    PostKind.SOCIAL: EventType("social_post.status_changed", "Social posts", True),
    PostKind.REEL: EventType("photoapp_reel_post.status_changed", "Reel posts", False),
    PostKind.CLIPAPP: EventType("clipapp_post.status_changed", "Clipapp posts", False),
}
# A connected account's health changed (account-svc; docs/accounts.md "Account health").
ACCOUNT_STATUS_EVENT = EventType("account.status_changed", "Account status", False)
# A published post's insights were read again (publish-svc; docs/insights.md).
INSIGHTS_EVENT = EventType("post.insights_updated", "Post insights", False)
# Every event a webhook URL can receive: the posts' status events, then the others.
ALL_EVENT_TYPES: tuple[EventType, ...] = (
    *EVENT_TYPES.values(),
    ACCOUNT_STATUS_EVENT,
    INSIGHTS_EVENT,
)
# The spec's two events go to every URL that names none; the others when asked for by name.
DEFAULT_EVENTS: tuple[str, ...] = tuple(e.name for e in ALL_EVENT_TYPES if e.by_default)
OPT_IN_EVENTS: tuple[str, ...] = tuple(e.name for e in ALL_EVENT_TYPES if not e.by_default)


class AccountStatus(StrEnum):
    """A connected account's health, as `account.status_changed` spells it."""

    CONNECTED = "connected"
    # The platform refused its token for good: its owner must connect it again. The API's
    # account listings show it as `disconnected: true` with the reason.
    NEEDS_RECONNECT = "needs_reconnect"
    # Removed from the organization (deleted).
    DISCONNECTED = "disconnected"


# Who can see a clipapp post (its `privacyLevel`), least private first.
CLIPAPP_PRIVACY_LEVELS: tuple[str, ...] = (
    "PUBLIC_TO_EVERYONE",
    "MUTUAL_FOLLOW_FRIENDS",
    "FOLLOWER_OF_CREATOR",
    "SELF_ONLY",
)
CLIPAPP_PUBLIC = CLIPAPP_PRIVACY_LEVELS[0]
# A clipapp post's privacy level when the caller names none.
CLIPAPP_DEFAULT_PRIVACY_LEVEL = "SELF_ONLY"
# clipapp's field names of our post insights metrics (its video query API: publish-svc asks
# for them, sandbox-net answers them).
CLIPAPP_INSIGHT_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "view_count": "views",
        "reach_count": "reach",
        "like_count": "likes",
        "comment_count": "comments",
        "share_count": "shares",
        "favorites_count": "saves",
    }
)
# Whether a reel lets linknet recommend it when the caller does not say (publish-svc applies
# it to an unset `share_to_linknet`; the catalog documents it).
REEL_SHARE_TO_LINKNET_DEFAULT = True

# The sandbox network's switch modes (sandbox-net, and `storypost sandbox switch`).
SWITCH_MODES: tuple[str, ...] = (
    "ok",
    "fail",
    "slow",
    "late-answer",
    "offline",
    "rate-limited",
    "token-expired",
)
