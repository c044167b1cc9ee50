"""Rate-limit buckets on a NATS JetStream key-value bucket; MongoDB while NATS is away.

Every API call takes one request from its organization's bucket, so the bucket's store sees
as many writes as the whole API. On a key-value bucket a take is one compare-and-set
(`update(key, tat, last=revision)`), a few hundred microseconds in nats-server, where the
MongoDB upsert costs a database write. Each replica remembers the TAT and revision it last
wrote, so a take is one round trip; when another replica moved the bucket in between, the
write is refused (wrong last sequence) and the take waits a random moment, reads the bucket
and tries again. Calls of one organization inside a replica queue on a lock of their own, so
they never refuse each other's writes. A remembered TAT is never newer than the stored one
(TATs only grow), so a take it refuses would be refused by the store too; a refusal is still
read back once so Retry-After comes from the stored TAT.

While NATS cannot be reached (not connected yet, restarting, a request timing out),
`FailoverBuckets` takes from the MongoDB bucket instead: calls go on being limited, at worst
with two half-used buckets for the length of the outage, and the fallbacks are counted and
logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import time
import weakref
from dataclasses import KW_ONLY, field

import nats.errors
import nats.js.errors
from cachetools import TTLCache
from nats.aio.client import Client as NatsClient
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue
from prometheus_client import CollectorRegistry, Counter

from account_svc.identity.ratelimit import BucketStore, Take
from storypost_runtime.bus import nats_connection
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.settings import NatsSettings

log = get_logger(__name__)

# A key untouched this long is dropped by NATS (its bucket has long been full again).
KEY_TTL_SECONDS = 600.0
_VALID_KEY = re.compile(r"^[-_=a-zA-Z0-9]+$")
# Failures that mean "NATS cannot answer now" (a refused compare-and-set is not one).
_UNREACHABLE = (nats.errors.Error, TimeoutError, OSError)


class StoreUnavailable(Exception):
    """The key-value bucket cannot answer now; the caller falls back."""


def kv_key(organization_id: str) -> str:
    """The organization id when it is a valid key (ours are), else a digest of it."""
    if _VALID_KEY.match(organization_id):
        return organization_id
    return "sha256-" + hashlib.sha256(organization_id.encode()).hexdigest()


@component
class KvBuckets:
    """Takes from buckets kept as `key -> TAT` in a NATS key-value bucket."""

    # A take loses a compare-and-set only to another replica's successful write, and a
    # full bucket refuses without writing, so losses are few; each one waits a random
    # moment (growing with the attempt) so racing replicas fall out of step.
    attempts: int = 64
    backoff_seconds: float = 0.001
    _client: NatsClient | None = field(init=False, default=None)
    _kv: KeyValue | None = field(init=False, default=None)
    # What this replica last wrote or read: key -> (TAT, revision).
    _known: TTLCache[str, tuple[float, int]] = field(
        init=False, default_factory=lambda: TTLCache(200_000, KEY_TTL_SECONDS)
    )
    _locks: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        init=False, default_factory=weakref.WeakValueDictionary
    )

    def attach(self, client: NatsClient, kv: KeyValue) -> None:
        self._client, self._kv = client, kv

    def detach(self) -> None:
        self._client, self._kv = None, None
        self._known.clear()

    @property
    def available(self) -> bool:
        return self._kv is not None and self._client is not None and self._client.is_connected

    async def take(self, key: str, request: Take) -> tuple[bool, float]:
        kv = self._kv
        if kv is None or not self.available:
            raise StoreUnavailable("not connected to NATS")
        name = kv_key(key)
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        async with lock:
            try:
                return await self._take(kv, name, request)
            except _UNREACHABLE as error:
                # Whether the write landed is unknown: forget what we knew of this bucket.
                self._known.pop(name, None)
                raise StoreUnavailable(str(error) or type(error).__name__) from error

    async def _take(self, kv: KeyValue, name: str, request: Take) -> tuple[bool, float]:
        for attempt in range(self.attempts):
            known = self._known.get(name)
            fresh = known is None
            if known is None:
                known = await _read(kv, name)
            tat, revision = known
            if revision and tat > request.latest_tat:
                if not fresh:
                    self._known.pop(name, None)  # refuse on the stored TAT, not ours
                    continue
                self._known[name] = known
                return False, tat
            moved = request.next_tat(tat if revision else None)
            try:
                revision = await kv.update(name, repr(moved).encode(), last=revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                self._known.pop(name, None)
                # Jitter to break lockstep between replicas, not a secret.
                await asyncio.sleep(random.uniform(0, self.backoff_seconds * (attempt + 1)))  # noqa: S311
                continue
            self._known[name] = (moved, revision)
            return True, moved
        raise StoreUnavailable(f"the bucket kept changing for {self.attempts} attempts")


async def _read(kv: KeyValue, name: str) -> tuple[float, int]:
    """The stored (TAT, revision); revision 0 when there is no bucket (a full one)."""
    try:
        entry = await kv.get(name)
    except nats.js.errors.KeyNotFoundError:
        return 0.0, 0
    return float(entry.value or b"0"), entry.revision or 0


@component
class FailoverBuckets:
    """The key-value buckets while NATS answers, MongoDB's otherwise."""

    _: KW_ONLY
    primary: KvBuckets
    fallback: BucketStore
    registry: CollectorRegistry | None = None
    log_every_seconds: float = 30.0
    _logged_at: float = field(init=False, default=-float("inf"))
    fallbacks: Counter = field(init=False)

    def __post_init__(self) -> None:
        self.fallbacks = Counter(
            "storypost_rate_limit_fallbacks",
            "Requests counted in the MongoDB bucket because NATS could not be reached",
            registry=self.registry,
        )

    async def take(self, key: str, request: Take) -> tuple[bool, float]:
        try:
            return await self.primary.take(key, request)
        except StoreUnavailable as error:
            self.fallbacks.inc()
            if time.monotonic() - self._logged_at >= self.log_every_seconds:
                self._logged_at = time.monotonic()
                log.warning("rate limit buckets fall back to MongoDB", reason=str(error))
            return await self.fallback.take(key, request)


async def keep_kv_attached(
    settings: NatsSettings,
    buckets: KvBuckets,
    *,
    bucket: str,
    timeout_seconds: float,
    retry_seconds: float = 2.0,
) -> None:
    """Connects to NATS (retrying until it answers), opens or creates the key-value bucket,
    attaches both to `buckets`, and holds them until cancelled. nats-py reconnects by itself
    after that; `KvBuckets.available` is false meanwhile."""
    name = "account-svc rate limits"
    async with nats_connection(settings, name, give_up_after_seconds=None) as client:
        js = client.jetstream(timeout=timeout_seconds)
        while True:
            try:
                kv = await _open_bucket(js, bucket)
                break
            except _UNREACHABLE as error:
                log.info("rate limits wait for JetStream", error=str(error) or type(error).__name__)
                await asyncio.sleep(retry_seconds)
        buckets.attach(client, kv)
        log.info("rate limit buckets on NATS", bucket=bucket)
        try:
            await asyncio.Event().wait()
        finally:
            buckets.detach()


async def _open_bucket(js: nats.js.JetStreamContext, bucket: str) -> KeyValue:
    try:
        return await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=bucket,
                description="storypost rate limits: organization id -> TAT (GCRA)",
                history=1,
                ttl=KEY_TTL_SECONDS,
                storage=StorageType.FILE,
            )
        )
