"""A component whose signed identity a dependency refuses stops at start, naming the setting.

Every internal call is signed with the caller's STORYPOST_SERVICE_KEY (service_auth.py). A
replica started with another component's key, the operator's or a stale one would otherwise
serve and fail each call it makes: a publish-svc replica would claim due posts, be refused
by account-svc, and hold each post back with growing retries while healthy replicas wait
(seen in bench/scheduler.py, whose second replica signed as the operator). As for a NATS
that refuses an identity (bus.refuse_wrong_identity), a retry cannot help: the process
exits 2 with the message. A dependency that does not answer within the probe's time is left
to the calls that follow (it may start later; the kubelet starts pods in any order).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import grpc

from storypost_runtime.logs import get_logger
from storypost_runtime.settings import SettingRefused

log = get_logger(__name__)

# How long the start waits for a dependency's answer to the probe.
PROBE_SECONDS = 3.0
# The answers that say the dependency refused who is calling, not what was asked.
REFUSED_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})


class IdentityRefused(SettingRefused):
    """A dependency refused this component's signed identity (STORYPOST_SERVICE_KEY)."""


async def refuse_refused_identity(
    dependency: str,
    probe: Callable[[], Awaitable[object]],
    within_seconds: float = PROBE_SECONDS,
) -> None:
    """Calls `probe` (a cheap call that `dependency` answers only to this component): a
    refusal of the caller raises IdentityRefused; any other answer, an error included, shows
    the identity was accepted; no answer within `within_seconds` is logged and let pass."""
    try:
        async with asyncio.timeout(within_seconds):
            await probe()
    except grpc.aio.AioRpcError as error:
        if error.code() in REFUSED_CODES:
            raise IdentityRefused(
                f"{dependency} refuses this component's identity ({error.code().name}: "
                f"{error.details()}); check STORYPOST_SERVICE_KEY (this component's own "
                f"key) and {dependency}'s STORYPOST_SERVICE_PUBLIC_KEYS"
            ) from None
        if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            log.info("identity not checked at start", dependency=dependency, code=error.code().name)
    except TimeoutError:
        log.info("identity not checked at start", dependency=dependency, code="timeout")
