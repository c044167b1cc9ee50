"""The failure matrix of issue #23: every platform call each driver makes, made to fail, to
answer after publish-svc's platform timeout (performed all the same), and performed right
before publish-svc is killed, with the outcome each cell must end in.

One definition serves the integration test that runs the cells
(tests/integration/publish/test_failure_matrix.py) and the table in docs/publishing.md
(`python -m tests.support.failure_matrix` prints it; a unit test compares the two).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    # The call answers 400 with the cell's message (once).
    FAIL = "fail"
    # The platform performs the call and answers after publish-svc's platform timeout (once).
    LATE = "late"
    # The platform performs the call, holds the answer, and publish-svc is killed -9.
    KILL = "kill"


class Expect(StrEnum):
    EXECUTED = "executed"
    # failed, the message naming the platform's reason.
    FAILED = "failed"
    # failed: "the outcome is unknown … check the account before posting this again".
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Driver:
    """What a row posts: the kind of post, on which platform, how it is connected."""

    name: str
    platform: str
    # story, reel, clipapp (schedule-clipapp-post) or social (schedule-social-post).
    kind: str
    media: str  # image or video
    # social: the post type; clipapp: the privacy level.
    post_type: str = ""
    privacy: str = ""
    share_to_linknet: bool = False


@dataclass(frozen=True)
class Call:
    driver: Driver
    # As the table shows it.
    label: str
    # The sandbox switch's endpoint (`*` is an id segment).
    endpoint: str
    outcomes: dict[Mode, Expect]
    # A look-up: made only after the answer to this endpoint's call was lost (a late answer
    # first, then the cell's switch on the look-up).
    after_lost: str | None = None


@dataclass(frozen=True)
class Cell:
    call: Call
    mode: Mode

    @property
    def expect(self) -> Expect:
        return self.call.outcomes[self.mode]

    @property
    def name(self) -> str:
        return f"{self.call.driver.name} / {self.call.label} / {self.mode.value}"


E, F, U = Expect.EXECUTED, Expect.FAILED, Expect.UNKNOWN
ALL = {Mode.FAIL: F, Mode.LATE: E, Mode.KILL: E}
# A call after the publishing call: a refusal or a lost answer proves nothing; look again.
AFTER = {Mode.FAIL: E, Mode.LATE: E, Mode.KILL: E}
# A look-up changes nothing on the platform: losing publish-svc after it is what the kill
# cell of the call it looks up already does (the restarted replica looks up again).
LOOK_UP = {Mode.FAIL: E, Mode.LATE: E}


def photoapp_calls(driver: Driver) -> list[Call]:
    return [
        Call(driver, "POST /users/{id}/media (container)", "media", ALL),
        Call(driver, "GET /containers/{id} (until ready)", "containers/*", ALL),
        Call(driver, "POST /users/{id}/media_publish", "media_publish", ALL),
        Call(
            driver,
            "GET /containers/{id} (look-up)",
            "containers/*",
            LOOK_UP,
            after_lost="media_publish",
        ),
    ]


def clipapp_calls(driver: Driver) -> list[Call]:
    init = "post/publish/video/init" if driver.media == "video" else "post/publish/content/init"
    creator = "post/publish/creator_info/query"
    return [
        Call(driver, f"POST /{creator}", creator, ALL),
        Call(driver, f"POST /{init}", init, ALL),
        Call(driver, "POST /post/publish/status/fetch", "post/publish/status/fetch", AFTER),
        Call(driver, "POST /video/list/ (look-up)", "video/list", LOOK_UP, after_lost=init),
    ]


def clipapp_private_calls(driver: Driver) -> list[Call]:
    # clipapp lists public posts only: a lost init answer of any other post cannot be found.
    init = "post/publish/content/init"
    return [Call(driver, f"POST /{init}", init, {Mode.FAIL: F, Mode.LATE: U, Mode.KILL: U})]


def social_calls(driver: Driver) -> list[Call]:
    return [
        Call(driver, "POST /posts (Idempotency-Key)", "posts", ALL),
        Call(driver, "GET /posts?idempotency_key= (look-up)", "posts", LOOK_UP, after_lost="posts"),
    ]


SOCIAL_TYPES = {
    "videochannel": ("SHORT", "video"),
    "linknet": ("IMAGE_POST", "image"),
    "pronet": ("IMAGE_POST", "image"),
    "pinboard": ("PIN", "image"),
    "ephemeral": ("IMAGE_STORY", "image"),
    "shorttext": ("IMAGE_POST", "image"),
    "microblog": ("IMAGE_POST", "image"),
}
PUBLIC = "PUBLIC_TO_EVERYONE"

CALLS: list[Call] = [
    *photoapp_calls(Driver("photoapp story", "photoapp", "story", "image")),
    *photoapp_calls(Driver("photoapp reel", "photoapp", "reel", "video")),
    *photoapp_calls(
        Driver("linknet cross-post", "photoapp", "story", "image", share_to_linknet=True)
    ),
    *clipapp_calls(Driver("clipapp video", "clipapp", "clipapp", "video", privacy=PUBLIC)),
    *clipapp_calls(Driver("clipapp photo", "clipapp", "clipapp", "image", privacy=PUBLIC)),
    *clipapp_private_calls(
        Driver("clipapp photo, not public", "clipapp", "clipapp", "image", privacy="SELF_ONLY")
    ),
    *clipapp_calls(
        Driver("social: clipapp photo", "clipapp", "social", "image", "PHOTO", privacy=PUBLIC)
    ),
    *(
        call
        for platform, (kind, media) in SOCIAL_TYPES.items()
        for call in social_calls(Driver(f"social: {platform}", platform, "social", media, kind))
    ),
]
CELLS: list[Cell] = [Cell(call, mode) for call in CALLS for mode in Mode if mode in call.outcomes]

WORDS = {
    Expect.EXECUTED: "executed",
    Expect.FAILED: "failed (its reason)",
    Expect.UNKNOWN: "failed: outcome unknown",
}
HEADER = (
    "| driver | platform call | fails (400) | answers after the timeout | "
    "publish-svc killed -9 after it |\n|---|---|---|---|---|"
)


def table() -> str:
    """The matrix as docs/publishing.md shows it (every cell ends with at most one post)."""
    rows = [HEADER]
    for call in CALLS:
        cells = [WORDS[call.outcomes[m]] if m in call.outcomes else "—" for m in Mode]
        request, _, note = call.label.partition(" (")
        label = f"`{request}` ({note}" if note else f"`{request}`"
        rows.append(f"| {call.driver.name} | {label} | {' | '.join(cells)} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
