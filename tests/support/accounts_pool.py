"""Post limits per platform account, read from where storypost defines them, and a pool of
accounts that spreads a load's posts so that no account ever meets one (issue #56).

A load that posts more to one account than a limit allows sees stories refused for that
limit (the sandbox network's "the account reached its limit of 25 posts in 24 hours",
publish-svc's story quota, account-svc's daily limit), not anything the test is about. The
limits are not restated here: each comes from its definition, with the value a stack started
with `env` (or this process's environment, as a local stack inherits it) gives it.

    pool = AccountPool("photoapp", env=stack.env)
    for _ in range(pool.accounts_for({STORY: 120})):   # enough for 120 stories
        pool.add(name := username())
        await connect_account(stack, org, "photoapp", name)
    account = pool.take(STORY)   # the least-used account with room; None: every one is full
    ...                          # (the load makes another call instead)
    pool.give_back(account, STORY)   # the story was refused after all: its slot is free again
    FIGURES["stories per account"] = pool.describe()

`connected_pool` does the connecting on a test stack. Limits are counted per account over
the pool's life: use fresh accounts (a rolling 24 hours is longer than any load).
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_settings import BaseSettings

from account_svc.connections.platforms import (
    CLIPAPP_POST,
    PLATFORMS,
    REEL,
    SOCIAL_POST,
    STORY,
    Platform,
    by_key,
)
from publish_svc.config import PublishSettings
from sandbox_net.config import SandboxSettings
from storypost_runtime.settings import env_variable

if TYPE_CHECKING:
    from storypost.testing.stack import StackHandle
    from tests.support.api import Org

__all__ = [
    "CLIPAPP_POST",
    "REEL",
    "SOCIAL_POST",
    "STORY",
    "AccountPool",
    "Limit",
    "connected_pool",
    "post_limits",
    "setting",
]


@dataclass(frozen=True)
class Limit:
    """At most `posts` posts per platform account (in any 24 hours, or per UTC day)."""

    posts: int
    # Where it is defined (and the variable that changes it): the pool's messages name it.
    source: str


def setting(settings: type[BaseSettings], field: str, env: Mapping[str, str] | None = None) -> int:
    """The value of an integer settings field in a component started with `env` on top of
    this process's environment (as a local stack starts its components): the variable when
    set, else the field's own default."""
    variable = env_variable(settings, field)
    merged = {**os.environ, **(env or {})}
    raw = merged.get(variable)
    if raw is None:
        default = settings.model_fields[field].default
        assert isinstance(default, int), f"{settings.__name__}.{field} is not an integer"
        return default
    return int(raw)


def _platform(key: str) -> Platform:
    found = by_key(key)
    if found is None:
        raise ValueError(f"no platform {key!r}: one of {[p.key for p in PLATFORMS]}")
    return found


def post_limits(
    platform: str, procedure: str, env: Mapping[str, str] | None = None
) -> tuple[Limit, ...]:
    """Every limit a post made with `procedure` (STORY, REEL, CLIPAPP_POST, SOCIAL_POST) to
    one account of `platform` counts against."""
    found = _platform(platform)
    procedures = {t.procedure for types in found.post_types.values() for t in types}
    if procedure not in procedures:
        raise ValueError(f"{platform} takes no {procedure}: {sorted(procedures)}")
    limits: list[Limit] = []
    if platform == "photoapp":
        # The sandbox network's own publishing limit: every photoapp post it publishes.
        field = "photoapp_publish_limit"
        limits.append(
            Limit(
                setting(SandboxSettings, field, env),
                f"sandbox-net's photoapp publishing limit per account and 24 hours "
                f"({env_variable(SandboxSettings, field)})",
            )
        )
    if procedure == STORY:
        # publish-svc's story quota (the spec's), counted when a story is accepted.
        field = "story_quota_per_day"
        limits.append(
            Limit(
                setting(PublishSettings, field, env),
                f"publish-svc's story quota per account and 24 hours "
                f"({env_variable(PublishSettings, field)})",
            )
        )
    if procedure == SOCIAL_POST and found.daily_limit is not None:
        # account-svc's daily limit of the platform (the spec's), reserved per social post.
        limits.append(
            Limit(
                found.daily_limit,
                f"account-svc's {platform} daily post limit per account "
                "(account_svc/connections/platforms.py)",
            )
        )
    return tuple(limits)


class AccountPool:
    """Accounts of one platform; `take` hands a post the least-used account that every limit
    of its procedure still has room on, so a load's posts stay within them all. Safe to use
    from several threads (the fuzzer calls from hypothesis's)."""

    def __init__(self, platform: str, *, env: Mapping[str, str] | None = None) -> None:
        _platform(platform)
        self.platform = platform
        self._env = dict(env or {})
        self._limits: dict[str, tuple[Limit, ...]] = {}
        self._accounts: list[str] = []
        # account -> limit source -> posts counted against it
        self._used: dict[str, Counter[str]] = {}
        self._posts: Counter[str] = Counter()
        self.held_back: Counter[str] = Counter()  # procedure -> posts no account had room for
        self._lock = threading.Lock()

    def limits(self, procedure: str) -> tuple[Limit, ...]:
        if procedure not in self._limits:
            self._limits[procedure] = post_limits(self.platform, procedure, self._env)
        return self._limits[procedure]

    def accounts_for(self, posts: Mapping[str, int]) -> int:
        """How many accounts `posts` (procedure -> number of posts) need so that none goes
        over any limit (at least one)."""
        per_source: Counter[str] = Counter()
        capacity: dict[str, int] = {}
        for procedure, count in posts.items():
            for limit in self.limits(procedure):
                per_source[limit.source] += count
                capacity[limit.source] = limit.posts
        needed = 1
        for source, count in per_source.items():
            if count and capacity[source] <= 0:
                raise ValueError(f"{source} is {capacity[source]}: no {self.platform} post fits")
            if count:
                needed = max(needed, math.ceil(count / capacity[source]))
        return needed

    def add(self, account: str) -> str:
        """An account the pool may hand out (photoapp: the username; clipapp: the platform
        account id; social connections: the social account id). Fresh: nothing posted yet."""
        with self._lock:
            if account not in self._used:
                self._accounts.append(account)
                self._used[account] = Counter()
        return account

    @property
    def accounts(self) -> list[str]:
        return list(self._accounts)

    def take(self, procedure: str, among: Iterable[str] | None = None) -> str | None:
        """The account for one more post of `procedure` (counted now), or None when every
        account (of `among`, when given) is at one of its limits: the caller posts nothing."""
        with self._lock:
            allowed = self._accounts if among is None else [a for a in among if a in self._used]
            open_ = [a for a in allowed if self._room(a, procedure) > 0]
            if not open_:
                self.held_back[procedure] += 1
                return None
            chosen = min(open_, key=lambda a: self._posts[a])
            for limit in self.limits(procedure):
                self._used[chosen][limit.source] += 1
            self._posts[chosen] += 1
            return chosen

    def give_back(self, account: str, procedure: str) -> None:
        """A post `take` counted that was certainly not accepted (a 4xx answer)."""
        with self._lock:
            for limit in self.limits(procedure):
                self._used[account][limit.source] -= 1
            self._posts[account] -= 1

    def posts(self) -> dict[str, int]:
        """Posts counted per account, in the order the accounts were added."""
        with self._lock:
            return {account: self._posts[account] for account in self._accounts}

    def describe(self, *, with_limit: bool = True) -> str:
        """For the figures: posts per account, the tightest limit, what was held back."""
        counts = self.posts()
        tightest = sorted({limit for p in self._limits for limit in self._limits[p]},
                          key=lambda limit: limit.posts)[:1]  # fmt: skip
        text = (
            f"{sum(counts.values())} {self.platform} posts on {len(counts)} accounts, "
            f"per account {sorted(counts.values(), reverse=True)}"
        )
        if tightest and with_limit:
            text += f" (at most {tightest[0].posts}: {tightest[0].source})"
        if self.held_back:
            text += f"; held back, every account full: {dict(self.held_back)}"
        return text

    def over_limit(self, published: Mapping[str, int], procedure: str) -> list[str]:
        """Accounts whose `published` count (e.g. the sandbox's) is over a limit of
        `procedure`: what a test asserts is empty."""
        return [
            f"{account}: {count} > {limit.posts} ({limit.source})"
            for account, count in published.items()
            for limit in self.limits(procedure)
            if count > limit.posts
        ]

    def _room(self, account: str, procedure: str) -> int:
        used = self._used[account]
        return min(
            (limit.posts - used[limit.source] for limit in self.limits(procedure)),
            default=1 << 30,
        )


async def connected_pool(
    stack: StackHandle,
    org: Org | str,
    platform: str,
    posts: Mapping[str, int],
    *,
    name: Callable[[], str],
    connection: str = "",
    at_least: int = 1,
) -> AccountPool:
    """A pool of as many fresh accounts (`name()` each), connected to `org`, as `posts`
    (procedure -> count) need under the stack's settings; at least `at_least`."""
    from tests.support.accounts import connect_account

    pool = AccountPool(platform, env=stack.env)
    for _ in range(max(at_least, pool.accounts_for(posts))):
        account = await connect_account(stack, org, platform, name(), connection=connection)
        if (connection or _platform(platform).default_connection) == "social":
            pool.add(account.social_account_id)  # schedule-social-post's socialAccountId
        elif platform == "photoapp":
            pool.add(account.username)  # photoappUsername
        else:
            pool.add(account.platform_account_id)  # clipappAccountId
    return pool
