"""The account pool every load of this suite and of bench/ takes its accounts from (issue #56):
its limits are the components' own, and it never hands an account a post past one. No stack."""

from __future__ import annotations

import pytest

from account_svc.connections.platforms import by_key
from publish_svc.config import PublishSettings
from sandbox_net.config import SandboxSettings
from tests.support.accounts_pool import (
    CLIPAPP_POST,
    REEL,
    SOCIAL_POST,
    STORY,
    AccountPool,
    Limit,
    post_limits,
)


def posts(limits: tuple[Limit, ...]) -> list[int]:
    return sorted(limit.posts for limit in limits)


def test_the_limits_are_the_components_own(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("STORYPOST_SANDBOX_PHOTOAPP_PUBLISH_LIMIT", "STORYPOST_STORY_QUOTA_PER_DAY"):
        monkeypatch.delenv(variable, raising=False)
    sandbox = SandboxSettings().photoapp_publish_limit
    quota = PublishSettings().story_quota_per_day
    linknet = by_key("linknet")
    assert linknet is not None and linknet.daily_limit is not None
    assert posts(post_limits("photoapp", STORY)) == sorted([sandbox, quota])
    assert posts(post_limits("photoapp", REEL)) == [sandbox]
    assert posts(post_limits("linknet", SOCIAL_POST)) == [linknet.daily_limit]
    # account-svc reserves daily slots for social posts only; clipapp's direct posts have none.
    assert post_limits("clipapp", CLIPAPP_POST) == ()
    with pytest.raises(ValueError, match="takes no"):
        post_limits("linknet", STORY)


def test_a_stack_setting_changes_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORYPOST_SANDBOX_PHOTOAPP_PUBLISH_LIMIT", "40")
    env = {"STORYPOST_STORY_QUOTA_PER_DAY": "3"}  # the stack's own env wins over this process's
    assert posts(post_limits("photoapp", STORY, env)) == [3, 40]
    assert posts(post_limits("photoapp", REEL, env)) == [40]


def test_the_pool_spreads_posts_and_holds_back_past_every_limit() -> None:
    limits = {"STORYPOST_STORY_QUOTA_PER_DAY": "3", "STORYPOST_SANDBOX_PHOTOAPP_PUBLISH_LIMIT": "4"}
    pool = AccountPool("photoapp", env=limits)
    assert pool.accounts_for({STORY: 7}) == 3  # the quota, 3 stories each
    assert pool.accounts_for({STORY: 2, REEL: 7}) == 3  # the sandbox's 4, stories and reels
    for name in ("a", "b"):
        pool.add(name)
    taken = [pool.take(STORY) or "" for _ in range(6)]
    assert sorted(taken) == ["a", "a", "a", "b", "b", "b"]  # evenly, least-used first
    assert pool.take(STORY) is None and pool.held_back[STORY] == 1
    # Reels count against the sandbox's limit only: one more each.
    assert {pool.take(REEL), pool.take(REEL)} == {"a", "b"}
    assert pool.take(REEL) is None
    pool.give_back("a", REEL)
    assert pool.take(REEL) == "a"
    assert pool.posts() == {"a": 4, "b": 4}
    assert pool.over_limit({"a": 4, "b": 5}, REEL) == [
        "b: 5 > 4 (sandbox-net's photoapp publishing limit per account and 24 hours "
        "(STORYPOST_SANDBOX_PHOTOAPP_PUBLISH_LIMIT))"
    ]
    assert "per account [4, 4]" in pool.describe()


def test_a_limit_of_zero_fits_nothing() -> None:
    pool = AccountPool("photoapp", env={"STORYPOST_SANDBOX_PHOTOAPP_PUBLISH_LIMIT": "0"})
    with pytest.raises(ValueError, match="no photoapp post fits"):
        pool.accounts_for({REEL: 1})
