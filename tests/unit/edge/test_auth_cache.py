"""The edge's token cache: an entry that expires while it is being read is looked up again,
and the revocation feed decides how long a valid token's check may be reused."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from edge.auth import (
    FEED_OVERLAP,
    REMEMBER_SECONDS,
    Authenticator,
    RevocationFeed,
    revocation_feed,
)
from edge.errors import ApiError
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.errors import Unauthenticated, Unavailable
from storypost_runtime.protobuf import timestamp, to_datetime
from tests.support.rpc import rpc_error


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
    auth = Authenticator(accounts=accounts, cache_seconds=5, timer=SteppingTimer(3))  # type: ignore[arg-type]
    for _ in range(20):
        caller = auth.authenticate("Bearer sp_token", "org1")
        assert (caller.organization_id, caller.credential_id) == ("org1", "cred1")
    assert 1 <= accounts.calls <= 20


def test_cached_answers_spare_account_svc_and_keep_the_organization_check() -> None:
    accounts = CountingAccounts()
    auth = Authenticator(accounts=accounts, cache_seconds=5, timer=lambda: 0.0)  # type: ignore[arg-type]
    for _ in range(5):
        auth.authenticate("Bearer sp_token", "org1")
    assert accounts.calls == 1
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_token", "org2")  # cached, still another organization's
    assert accounts.calls == 1


class ManualTimer:
    def __init__(self) -> None:
        self.now = 0.0
        self.looks = 0

    def __call__(self) -> float:
        self.looks += 1
        return self.now


class Revoking:
    """account-svc as the authenticator and its feed see it: tokens, revocations, outages."""

    def __init__(self) -> None:
        self.calls = 0
        self.revoked: list[str] = []
        self.truncated = False
        self.down = False
        self.broken = False
        self.asked_since: list[datetime] = []
        self.during_check: Callable[[], None] | None = None

    def Authenticate(self, request: pb.AuthenticateRequest) -> pb.AuthenticateResponse:
        self.calls += 1
        credential = request.token.removeprefix("sp_")
        if credential in self.revoked:
            raise rpc_error(Unauthenticated("not authenticated"))
        if self.during_check is not None:
            self.during_check()
        return pb.AuthenticateResponse(organization_id="org1", credential_id=credential)

    def ListRevokedCredentials(
        self, request: pb.ListRevokedCredentialsRequest
    ) -> pb.ListRevokedCredentialsResponse:
        if self.down:
            raise rpc_error(Unavailable("account-svc is down"))
        if self.broken:
            raise RuntimeError("a bug in the read")
        self.asked_since.append(to_datetime(request.since))
        return pb.ListRevokedCredentialsResponse(
            credential_ids=self.revoked, truncated=self.truncated, as_of=timestamp(AS_OF)
        )


AS_OF = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
WALL = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)


def feed_world() -> tuple[Revoking, ManualTimer, Authenticator, RevocationFeed]:
    accounts = Revoking()
    timer = ManualTimer()
    auth = Authenticator(accounts=accounts, cache_seconds=5, timer=timer)  # type: ignore[arg-type]
    feed = revocation_feed(auth)
    assert feed is not None and feed.interval == pytest.approx(5 / 3)
    feed.wall_clock = lambda: WALL
    return accounts, timer, auth, feed


def test_while_the_feed_is_current_a_valid_check_outlives_the_cache_time() -> None:
    accounts, timer, auth, feed = feed_world()
    auth.authenticate("Bearer sp_a", "org1")
    for _ in range(30):  # 60 s, the feed read every 2 s
        timer.now += 2
        feed.read_once()
        auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 1


def test_a_revocation_in_the_feed_ends_the_token_at_the_next_read() -> None:
    accounts, timer, auth, feed = feed_world()
    auth.authenticate("Bearer sp_a", "org1")
    auth.authenticate("Bearer sp_b", "org1")
    timer.now += 30
    feed.read_once()
    accounts.revoked.append("a")
    auth.authenticate("Bearer sp_a", "org1")  # not read yet: within the allowed time
    timer.now += 1
    feed.read_once()
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_a", "org1")
    auth.authenticate("Bearer sp_b", "org1")  # another credential's check is kept
    assert accounts.calls == 3


def test_without_a_current_feed_a_check_is_asked_again_after_the_cache_time() -> None:
    accounts, timer, auth, feed = feed_world()
    auth.authenticate("Bearer sp_a", "org1")
    timer.now += 1
    feed.read_once()
    accounts.down = True
    timer.now += 4.5  # the last read began 4.5 s ago: still vouches
    auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 1
    accounts.revoked.append("a")  # revoked while the feed cannot be read
    timer.now += 1  # the last read began 5.5 s ago: the check is asked again, and refused
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 2


def test_a_read_vouches_only_for_checks_stored_after_it_was_applied() -> None:
    # A check made before a revocation, which lands after a read that listed the revocation
    # (and had nothing to drop then), is not vouched for by that read.
    accounts, timer, auth, feed = feed_world()

    def revoked_while_asked() -> None:
        accounts.during_check = None
        accounts.revoked.append("a")
        timer.now += 1
        feed.read_once()
        timer.now += 1

    accounts.during_check = revoked_while_asked
    auth.authenticate("Bearer sp_a", "org1")  # asked at 0, stored at 2
    accounts.down = True
    timer.now = 5.5  # the read began 4.5 s ago, but was applied before the check was stored
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 2


def test_a_cut_list_forgets_every_check() -> None:
    accounts, _, auth, feed = feed_world()
    auth.authenticate("Bearer sp_a", "org1")
    accounts.truncated = True
    feed.read_once()
    auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 2


def test_an_invalid_token_is_remembered_only_for_the_cache_time() -> None:
    accounts, timer, auth, feed = feed_world()
    accounts.revoked.append("a")
    for _ in range(2):
        with pytest.raises(ApiError):
            auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 1
    timer.now += 1
    feed.read_once()
    timer.now += 4.5
    feed.read_once()
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_a", "org1")
    assert accounts.calls == 2


def test_each_read_asks_from_the_previous_answer_less_the_overlap() -> None:
    accounts, _, _, feed = feed_world()
    feed.read_once()
    feed.read_once()
    assert accounts.asked_since == [WALL - FEED_OVERLAP, AS_OF - FEED_OVERLAP]


@pytest.mark.parametrize("failure", ["down", "broken"])
def test_the_feed_thread_outlives_an_outage_and_a_bug(failure: str) -> None:
    accounts, _, auth, _ = feed_world()
    feed = RevocationFeed(accounts=accounts, authenticator=auth, interval=0.01)  # type: ignore[arg-type]
    setattr(accounts, failure, True)
    feed.start()
    try:
        time.sleep(0.1)
        assert accounts.asked_since == []
        setattr(accounts, failure, False)
        deadline = time.monotonic() + 5
        while not accounts.asked_since and time.monotonic() < deadline:
            time.sleep(0.01)
        assert accounts.asked_since
    finally:
        feed.stop()


def test_no_feed_when_nothing_is_remembered() -> None:
    assert revocation_feed(Authenticator(accounts=Revoking(), cache_seconds=0)) is None  # type: ignore[arg-type]


def test_a_listed_revocation_looks_only_at_its_own_checks() -> None:
    # A revocation is listed by every read of its overlap (~36 reads), under the lock every
    # request takes: each read must cost the checks it drops, not the whole cache. Every
    # look at a remembered check reads the clock (cachetools' expiry), so the clock counts.
    accounts, timer, auth, feed = feed_world()
    for number in range(2_000):
        auth.authenticate(f"Bearer sp_c{number}", "org1")
    accounts.revoked.append("c7")
    timer.looks = 0
    feed.read_once()
    assert timer.looks < 20
    with pytest.raises(ApiError):
        auth.authenticate("Bearer sp_c7", "org1")
    auth.authenticate("Bearer sp_c8", "org1")
    assert accounts.calls == 2_001  # c8 still remembered


def test_the_index_of_checks_stays_bounded_as_checks_expire() -> None:
    _, timer, auth, feed = feed_world()
    for round_ in range(5):
        for number in range(1_000):
            auth.authenticate(f"Bearer sp_r{round_}n{number}", "org1")
        timer.now += REMEMBER_SECONDS + 1  # every check of this round expires
        feed.read_once()
    assert len(auth._holders) <= 2_000  # the index's size is what is tested
