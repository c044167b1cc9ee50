"""Webhook URLs of an organization: at most 5, https only, refused when they reach inward."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document
from storypost_runtime.secret_box import SecretBox
from webhook_svc.config import DEV_WEBHOOK_SECRET_KEY
from webhook_svc.event_types import stored_events, subscription
from webhook_svc.signing import check_secret
from webhook_svc.targets import AddressPolicy, check_reachable, normalize_url

MAX_WEBHOOKS = 5


@dataclass(frozen=True)
class Webhook:
    webhook_id: str
    organization_id: str
    url: str
    events: list[str]
    created_at: datetime
    signing_secret: str | None = field(default=None, repr=False)

    @property
    def signed(self) -> bool:
        return bool(self.signing_secret)

    def receives(self, event_type: str) -> bool:
        return event_type in self.events

    @classmethod
    def from_doc(cls, doc: Document, box: SecretBox) -> Webhook:
        return cls(
            webhook_id=doc["_id"],
            organization_id=doc["organizationId"],
            url=doc["url"],
            events=stored_events(doc),
            created_at=doc["createdAt"],
            signing_secret=stored_secret(doc, box),
        )


def stored_secret(doc: Document, box: SecretBox) -> str | None:
    """The signing secret of a record: encrypted at rest (`signingSecretEncrypted`); records
    written before that keep a plain `signingSecret`, still honoured."""
    encrypted = doc.get("signingSecretEncrypted")
    if encrypted:
        return box.decrypt(str(encrypted))
    return doc.get("signingSecret") or None


# Webhooks of each organization (a module-level name: `Webhooks.list` shadows `list` there).
ByOrganization = dict[str, list[Webhook]]


def check_organization(organization_id: str) -> str:
    if not organization_id or len(organization_id) > 128:
        raise InvalidArgument(
            "organization_id is required (at most 128 characters)",
            field_violations={"organizationId": ["required"]},
        )
    return organization_id


@component
class Webhooks:
    """Adds, lists and removes URLs; every query is scoped by the organization."""

    _: KW_ONLY
    collection: AsyncCollection[Document]
    clock: Clock
    policy: AddressPolicy
    allow_http_loopback: bool
    box: SecretBox | None = None
    # Signing secrets are stored encrypted: a copy of the database cannot sign deliveries.
    _box: SecretBox = field(init=False)

    def __post_init__(self) -> None:
        self._box = self.box or SecretBox([DEV_WEBHOOK_SECRET_KEY])

    async def add(
        self, organization_id: str, url: str, events: Sequence[str], signing_secret: str
    ) -> Webhook:
        check_organization(organization_id)
        parsed = normalize_url(url, allow_http_loopback=self.allow_http_loopback)
        wanted_events = subscription(events)
        secret = check_secret(signing_secret) if signing_secret else None
        await check_reachable(parsed, self.policy)
        normalized = str(parsed)
        doc: Document = {
            "_id": secrets.token_hex(12),
            "organizationId": organization_id,
            "url": normalized,
            "events": wanted_events,
            "createdAt": self.clock.now(),
        }
        if secret:
            doc["signingSecretEncrypted"] = self._box.encrypt(secret)
        # Slots 0..4 under the unique (organizationId, slot) index: racing adds can never
        # store a sixth URL; (organizationId, url) keeps a URL once.
        for _ in range(MAX_WEBHOOKS + 1):
            existing = await self._stored(organization_id)
            same = next((d for d in existing if d["url"] == normalized), None)
            if same is not None:
                return self._repeat(same, wanted_events, secret)
            taken = {d.get("slot") for d in existing}
            free = [slot for slot in range(MAX_WEBHOOKS) if slot not in taken]
            if not free:
                raise FailedPrecondition(
                    f"an organization can have at most {MAX_WEBHOOKS} webhook URLs; "
                    "remove one first",
                    reason="WEBHOOK_LIMIT",
                )
            doc["slot"] = free[0]
            try:
                await self.collection.insert_one(doc)
            except DuplicateKeyError:
                # Another add took this slot or this URL meanwhile: look again.
                continue
            return Webhook.from_doc(doc, self._box)
        raise FailedPrecondition("too many concurrent changes to the webhooks; retry")

    def _repeat(self, doc: Document, events: list[str], secret: str | None) -> Webhook:
        """The same URL again: a retry when nothing differs, else a clear conflict."""
        stored = Webhook.from_doc(doc, self._box)
        same_secret = hmac.compare_digest(
            (stored.signing_secret or "").encode(), (secret or "").encode()
        )
        if sorted(stored.events) == sorted(events) and same_secret:
            return stored
        raise AlreadyExists(
            f"this URL is already configured (webhook {stored.webhook_id}) with other "
            "settings; remove it first to change them",
            reason="WEBHOOK_EXISTS",
        )

    async def _stored(self, organization_id: str) -> list[Document]:
        cursor = self.collection.find({"organizationId": organization_id})
        return [doc async for doc in cursor]

    async def list(self, organization_id: str) -> list[Webhook]:
        check_organization(organization_id)
        docs = await self._stored(organization_id)
        return sorted(
            (Webhook.from_doc(d, self._box) for d in docs),
            key=lambda w: (w.created_at, w.webhook_id),
        )

    async def get(self, organization_id: str, webhook_id: str) -> Webhook:
        return await self._one(self.collection.find_one, organization_id, webhook_id)

    async def remove(self, organization_id: str, webhook_id: str) -> Webhook:
        return await self._one(self.collection.find_one_and_delete, organization_id, webhook_id)

    async def _one(
        self,
        action: Callable[[Document], Awaitable[Document | None]],
        organization_id: str,
        webhook_id: str,
    ) -> Webhook:
        """The webhook `action` (a find or a delete) returns, looked up within its organization
        only; NotFound when there is none."""
        check_organization(organization_id)
        doc = await action({"_id": webhook_id, "organizationId": organization_id})
        if doc is None:
            raise NotFound(f"webhook {webhook_id} not found")
        return Webhook.from_doc(doc, self._box)

    async def of_organizations(self, organization_ids: Collection[str]) -> ByOrganization:
        """Every webhook of these organizations (one query for a batch of events)."""
        found: ByOrganization = {}
        if not organization_ids:
            return found
        cursor = self.collection.find({"organizationId": {"$in": list(organization_ids)}})
        async for doc in cursor:
            webhook = Webhook.from_doc(doc, self._box)
            found.setdefault(webhook.organization_id, []).append(webhook)
        return found

    async def by_id(self, webhook_id: str) -> Webhook | None:
        """A webhook by id alone (a delivery names it); None once removed."""
        doc = await self.collection.find_one({"_id": webhook_id})
        return None if doc is None else Webhook.from_doc(doc, self._box)
