"""Sign-in attempt limits per email and per client address, shared by every replica.

Both are kept per organization: wrong passwords sprayed at one workspace from an address
(an office NAT, a mobile carrier's gateway) must not lock every other workspace's users at
that address out. A third, higher bucket per address across all workspaces stops one
address spraying every workspace. Behind an ingress the address is the client's own (the
edge's trusted proxy setting, docs/edge.md), never the proxy's.

Each key is a GCRA token bucket in one MongoDB document (as the request rate limit in
ratelimit.py): `size` attempts, refilled evenly over `window` seconds. An attempt is taken
before the password is checked, so concurrent guesses cannot slip past the limit; a
successful sign-in gives its attempt back, so only failed ones add up.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import KW_ONLY, dataclass
from datetime import timedelta

from account_svc.identity.ratelimit import Take, take_in_document
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted

TOO_MANY = "too many sign-in attempts; try again in {wait}"


@dataclass(frozen=True)
class Bucket:
    """A limit: `size` attempts per `window_seconds`."""

    size: int
    window_seconds: float

    @property
    def interval(self) -> float:
        return self.window_seconds / self.size


def limit_key(kind: str, *parts: str) -> str:
    # Hashed: the limits collection should not become a list of emails and addresses.
    return f"{kind}:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:40]


def describe_wait(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} seconds"
    return f"{math.ceil(seconds / 60)} minutes"


@component
class SignInLimits:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    per_email: Bucket
    per_address: Bucket
    per_address_everywhere: Bucket

    def keys(self, organization_id: str, email: str, client_ip: str) -> list[tuple[str, Bucket]]:
        keys = [(limit_key("email", organization_id, email.strip().lower()), self.per_email)]
        if client_ip:
            keys.append((limit_key("ip", organization_id, client_ip), self.per_address))
            keys.append((limit_key("ip-all", client_ip), self.per_address_everywhere))
        return keys

    async def take(self, organization_id: str, email: str, client_ip: str) -> None:
        """Takes one attempt from each bucket; ResourceExhausted when one is empty."""
        for key, bucket in self.keys(organization_id, email, client_ip):
            wait = await self._take(key, bucket)
            if wait:
                raise ResourceExhausted(
                    TOO_MANY.format(wait=describe_wait(wait)),
                    retry_after_seconds=wait,
                    reason="SIGN_IN_RATE_LIMITED",
                )

    async def give_back(self, organization_id: str, email: str, client_ip: str) -> None:
        """Returns the attempt a successful sign-in took."""
        now = self.clock.now().timestamp()
        for key, bucket in self.keys(organization_id, email, client_ip):
            await self.records.signin_limits.update_one(
                {"_id": key},
                [{"$set": {"tat": {"$max": [{"$subtract": ["$tat", bucket.interval]}, now]}}}],
            )

    async def _take(self, key: str, bucket: Bucket) -> int:
        """0 when taken, else whole seconds until an attempt is available."""
        moment = self.clock.now()
        now = moment.timestamp()
        request = Take(now, bucket.interval, now + (bucket.size - 1) * bucket.interval)
        # The record is useless once the bucket is full again: let the TTL index drop it.
        purge_at = moment + timedelta(seconds=bucket.window_seconds * 2)
        taken, tat = await take_in_document(
            self.records.signin_limits, key, request, {"purgeAt": purge_at}
        )
        if taken:
            return 0
        # The record exists but its bucket is empty.
        return max(1, math.ceil(tat - now - (bucket.size - 1) * bucket.interval))
