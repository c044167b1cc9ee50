"""Which URLs each organization has, for the event consumer: read once per short interval.

Every event needs its organization's URLs. Reading them from MongoDB per event would cost
one query per event (the embedded MongoDB manages a few hundred a second in all), so answers
are kept for `ttl` seconds, concurrent lookups of one organization share one query, and an
organization's entry is dropped at once when this replica adds or removes one of its URLs.
Another replica sees such a change within `ttl` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, field

from storypost_runtime.component import component
from webhook_svc.webhooks import ByOrganization, Webhook, Webhooks

MAX_ENTRIES = 10_000


@component
class WebhookDirectory:
    _: KW_ONLY
    webhooks: Webhooks
    ttl_seconds: float
    monotonic: Callable[[], float] = time.monotonic
    _entries: dict[str, tuple[float, list[Webhook]]] = field(init=False, default_factory=dict)
    _loading: dict[str, asyncio.Future[list[Webhook]]] = field(init=False, default_factory=dict)

    def forget(self, organization_id: str) -> None:
        """The organization's URLs changed: the next lookup reads them again."""
        self._entries.pop(organization_id, None)
        self._loading.pop(organization_id, None)

    async def of_organizations(self, organization_ids: Collection[str]) -> ByOrganization:
        now = self.monotonic()
        found: ByOrganization = {}
        missing: list[str] = []
        joined: dict[str, asyncio.Future[list[Webhook]]] = {}
        for org in set(organization_ids):
            entry = self._entries.get(org)
            if entry is not None and entry[0] > now:
                found[org] = entry[1]
            elif org in self._loading:
                joined[org] = self._loading[org]
            else:
                missing.append(org)
        if missing:
            found.update(await self._load(missing, now))
        for org, loading in joined.items():
            found[org] = await asyncio.shield(loading)
        return {org: hooks for org, hooks in found.items() if hooks}

    async def _load(self, organization_ids: list[str], now: float) -> ByOrganization:
        loop = asyncio.get_running_loop()
        futures = {org: loop.create_future() for org in organization_ids}
        self._loading.update(futures)
        try:
            loaded = await self.webhooks.of_organizations(organization_ids)
        except BaseException as error:
            failure = error if isinstance(error, Exception) else RuntimeError("cancelled")
            for org, future in futures.items():
                if self._loading.get(org) is future:
                    del self._loading[org]
                future.set_exception(failure)
                future.exception()  # retrieved here; each joiner re-raises it
            raise
        if len(self._entries) > MAX_ENTRIES:
            self._entries = {o: e for o, e in self._entries.items() if e[0] > now}
        answer: ByOrganization = {}
        for org, future in futures.items():
            answer[org] = loaded.get(org, [])
            # After a change (forget) while loading, the answer is used once, not kept.
            if self._loading.get(org) is future:
                del self._loading[org]
                self._entries[org] = (now + self.ttl_seconds, answer[org])
            future.set_result(answer[org])
        return answer
