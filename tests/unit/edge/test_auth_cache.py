"""The edge's token cache: an entry that expires while it is being read is looked up again."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from edge.auth import Authenticator
from edge.errors import ApiError
from storypost_runtime.component import component


@dataclass
class Reply:
    organization_id: str
    credential_id: str


class CountingAccounts:
    def __init__(self) -> None:
        self.calls = 0

    def Authenticate(self, request: object) -> Reply:
        self.calls += 1
        return Reply("org1", "cred1")


@component
class SteppingTimer:
    """Each look at the clock is `step` seconds after the previous one."""

    step: float
    now: float = field(init=False, default=0.0)

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_an_entry_expiring_between_two_looks_is_fetched_again_not_a_500() -> None:
    # With a 5 s cache and 3 s between looks at the clock, an entry is alive at the first
    # look after it was stored and gone at the second: a membership test followed by a read
    # (the old code) raised KeyError here, which the edge answered with a 500.
    accounts = CountingAccounts()
    auth = Authenticator(accounts, cache_seconds=5, timer=SteppingTimer(3))  # type: ignore[arg-type]
    for _ in range(20):
        caller = auth.authenticate("Bearer sp_token", "org1")
        assert (caller.organization_id, caller.credential_id) == ("org1", "cred1")
    assert 1 <= accounts.calls <= 20


def test_cached_answers_spare_account_svc_and_keep_the_organization_check() -> None:
    accounts = CountingAccounts()
    auth = Authenticator(accounts, cache_seconds=5, timer=lambda: 0.0)  # type: ignore[arg-type]
    for _ in range(5):
        auth.authenticate("Bearer sp_token", "org1")
    assert accounts.calls == 1
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_token", "org2")  # cached, still another organization's
    assert accounts.calls == 1
