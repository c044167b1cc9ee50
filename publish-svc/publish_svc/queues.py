"""Posting queues: weekly slots per connected account, and the slots posts take from them.

A queue belongs to one connected account (its `socialAccountId`) of one organization. A post
scheduled into a queue takes the earliest free slot at least `RENDER_LEAD` ahead. A taken slot
is a document keyed by (account, instant) — `queue_slots`' `_id` — inserted in the step that
gives the post its date: of 50 posts racing for one instant, the database lets one in, and the
others go on to the next instant. A unique index on the post's id keeps one slot per post, so
a repeated schedule call takes no second one. A slot whose post was canceled or failed (or is
not stored) is free again: the next post takes it over with a write guarded by the old post.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, date, datetime, timedelta

from pymongo import ASCENDING, IndexModel, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from publish_svc.accounts_client import AccountsClient, social_ref
from publish_svc.listing import LISTED_FIELD
from publish_svc.queue_times import WeeklySlot, instants, invalid, time_zone, weekly_slots
from storypost.account.v1 import account_pb2 as apb
from storypost_runtime.bounded_set import BoundedSet
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import DomainError
from storypost_runtime.mongo import Document, ensure_indexes
from storypost_runtime.vocabulary import UNPUBLISHED_STATUSES

MAX_QUEUES = 20
NAME_MAX = 64
DEFAULT_NAME = "default"
# A post takes a slot at least this far ahead, so its rendering is finished by then.
RENDER_LEAD = timedelta(minutes=5)
# How far ahead slots are looked for, and in what steps.
HORIZON = timedelta(days=366)
STEP = timedelta(days=14)
# A slot whose post is still not stored this long after it was taken is free again (the
# schedule call that took it died; one that is refused gives it back at once).
ORPHAN_AFTER = timedelta(minutes=10)
# The statuses whose post no longer needs its slot.
RELEASED = tuple(status.value for status in UNPUBLISHED_STATUSES)


@dataclass(frozen=True)
class Queue:
    organization_id: str
    social_account_id: str
    name: str
    zone_name: str
    slots: tuple[WeeklySlot, ...]
    created_at: datetime
    updated_at: datetime

    def to_doc(self) -> Document:
        return {
            "_id": queue_id(self.organization_id, self.social_account_id, self.name),
            "organizationId": self.organization_id,
            "socialAccountId": self.social_account_id,
            "queueName": self.name,
            "timeZone": self.zone_name,
            "slots": [{"weekday": s.weekday_name, "time": s.time_text} for s in self.slots],
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    @classmethod
    def from_doc(cls, doc: Document) -> Queue:
        return cls(
            doc["organizationId"],
            doc["socialAccountId"],
            doc["queueName"],
            doc["timeZone"],
            weekly_slots(doc["slots"]),
            doc["createdAt"],
            doc["updatedAt"],
        )


def queue_id(organization_id: str, social_account_id: str, name: str) -> str:
    return f"{organization_id}:{social_account_id}:{name}"


def slot_id(social_account_id: str, moment: datetime) -> str:
    """One slot per account and instant, whichever organization's queue names it."""
    return f"{social_account_id}:{moment.astimezone(UTC).isoformat()}"


def _midnight(moment: datetime) -> datetime:
    """The start of `moment`'s UTC day (the day the daily post limit counts in)."""
    return datetime.combine(moment.astimezone(UTC).date(), datetime.min.time(), UTC)


def queue_name(name: str) -> str:
    """The name as given (1 to 64 characters, no surrounding spaces); a 400 otherwise."""
    if not 1 <= len(name) <= NAME_MAX or name != name.strip():
        raise invalid("queueName", f"must be 1 to {NAME_MAX} characters, without outer spaces")
    return name


@dataclass(frozen=True)
class Taken:
    """A post's slot: where it is and which post holds it."""

    id: str
    at: datetime
    post_id: str


@component
class QueueStore:
    _: KW_ONLY
    queues: AsyncCollection[Document]
    slots: AsyncCollection[Document]
    posts: AsyncCollection[Document]
    # One document per account: the names of its queues, grown by one conditional write so
    # that racing creations of new queues stop at MAX_QUEUES (a count, then an insert, would
    # let each of them through).
    names: AsyncCollection[Document]
    _named: BoundedSet = field(init=False)

    def __post_init__(self) -> None:
        self._named = BoundedSet(collection=self.names, array="names", limit=MAX_QUEUES)

    @classmethod
    def of(cls, db: AsyncDatabase[Document]) -> QueueStore:
        return cls(
            queues=db["queues"],
            slots=db["queue_slots"],
            posts=db["posts"],
            names=db["queue_names"],
        )

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.queues,
            [
                IndexModel(
                    [("organizationId", ASCENDING), ("socialAccountId", ASCENDING)],
                    name="org_account",
                )
            ],
        )
        await ensure_indexes(
            self.slots,
            [
                # One slot per post: a repeated schedule call finds its own.
                IndexModel([("postId", ASCENDING)], unique=True, name="post"),
                IndexModel([("socialAccountId", ASCENDING), ("at", ASCENDING)], name="account_at"),
            ],
        )

    async def put(self, queue: Queue) -> Queue:
        doc = queue.to_doc()
        created = doc.pop("createdAt")
        stored = await self.queues.find_one_and_update(
            {"_id": doc["_id"]},
            {"$set": doc, "$setOnInsert": {"createdAt": created}},
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        assert stored is not None  # upserted
        return Queue.from_doc(stored)

    async def claim_name(self, organization_id: str, social_account_id: str, name: str) -> bool:
        """Counts `name` among the account's queues; False when MAX_QUEUES others are there.
        Of racing creations exactly the room left gets in; a name already there (a queue
        replaced) is always taken."""
        return await self._named.add(queue_id(organization_id, social_account_id, ""), name)

    async def release_name(self, organization_id: str, social_account_id: str, name: str) -> None:
        await self._named.remove(queue_id(organization_id, social_account_id, ""), name)

    async def count_names_of_stored_queues(self) -> None:
        """Migration step: the names of queues stored before `queue_names` existed."""
        async for doc in self.queues.find(
            {}, {"organizationId": 1, "socialAccountId": 1, "queueName": 1}
        ):
            key = queue_id(doc["organizationId"], doc["socialAccountId"], "")
            await self.names.update_one(
                {"_id": key}, {"$addToSet": {"names": doc["queueName"]}}, upsert=True
            )

    async def get(self, organization_id: str, social_account_id: str, name: str) -> Queue | None:
        doc = await self.queues.find_one(
            {"_id": queue_id(organization_id, social_account_id, name)}
        )
        return Queue.from_doc(doc) if doc else None

    async def all_of(self, organization_id: str, social_account_id: str) -> list[Queue]:
        find: Document = {"organizationId": organization_id}
        if social_account_id:
            find["socialAccountId"] = social_account_id
        cursor = self.queues.find(find).sort([("socialAccountId", 1), ("queueName", 1)])
        return [Queue.from_doc(doc) async for doc in cursor]

    async def delete(self, organization_id: str, social_account_id: str, name: str) -> bool:
        result = await self.queues.delete_one(
            {"_id": queue_id(organization_id, social_account_id, name)}
        )
        # After the queue: a crash in between leaves a name counted that a later set-queue
        # of it, or this delete again, settles.
        await self.release_name(organization_id, social_account_id, name)
        return result.deleted_count == 1

    async def held(
        self, social_account_id: str, start: datetime, end: datetime, now: datetime
    ) -> tuple[list[Taken], dict[datetime, str]]:
        """The account's slots in (start, end] whose posts still hold them, and the posts of
        those whose posts no longer do (by instant: a new post takes such a slot over)."""
        cursor = self.slots.find(
            {"socialAccountId": social_account_id, "at": {"$gt": start, "$lte": end}}
        )
        docs = [doc async for doc in cursor]
        released = await self._released(docs, now)
        living = [
            Taken(doc["_id"], doc["at"], doc["postId"])
            for doc in docs
            if doc["postId"] not in released
        ]
        stale = {doc["at"]: doc["postId"] for doc in docs if doc["postId"] in released}
        return living, stale

    async def _released(self, slots: list[Document], now: datetime) -> set[str]:
        """The posts of these slots that no longer need them: canceled or failed, or never
        stored although their schedule call took the slot ORPHAN_AFTER ago (it died)."""
        if not slots:
            return set()
        ids = sorted({doc["postId"] for doc in slots})
        cursor = self.posts.find({"_id": {"$in": ids}}, {"status": 1})
        status = {doc["_id"]: doc["status"] async for doc in cursor}
        orphaned = {
            doc["postId"]
            for doc in slots
            if doc["postId"] not in status and doc.get("claimedAt", now) <= now - ORPHAN_AFTER
        }
        return orphaned | {post for post, value in status.items() if value in RELEASED}

    async def posts_per_day(
        self, organization_id: str, social_account_id: str, start: datetime, end: datetime
    ) -> dict[date, set[str]]:
        """The posts to the account (queued or not, not canceled or failed) per UTC day of
        their date in [start, end]: a day the daily limit fills takes no more."""
        cursor = self.posts.find(
            {
                "organizationId": organization_id,
                "account.socialAccountId": social_account_id,
                LISTED_FIELD: {"$gte": start, "$lte": end},
                "status": {"$nin": list(RELEASED)},
            },
            {LISTED_FIELD: 1},
        )
        days: dict[date, set[str]] = {}
        async for doc in cursor:
            days.setdefault(doc[LISTED_FIELD].astimezone(UTC).date(), set()).add(doc["_id"])
        return days

    async def slot_of(self, post_id: str) -> Taken | None:
        doc = await self.slots.find_one({"postId": post_id})
        return Taken(doc["_id"], doc["at"], doc["postId"]) if doc else None

    async def claim(
        self,
        organization_id: str,
        queue: Queue,
        at: datetime,
        post_id: str,
        now: datetime,
        *,
        stale: str | None = None,
    ) -> bool:
        """Takes the slot at `at` for the post; False when another post holds it (or the post
        holds one already). `stale`: the canceled or failed post whose slot it takes over."""
        key = slot_id(queue.social_account_id, at)
        doc: Document = {
            "organizationId": organization_id,
            "socialAccountId": queue.social_account_id,
            "queueName": queue.name,
            "at": at,
            "postId": post_id,
            "claimedAt": now,
        }
        try:
            if stale is None:
                await self.slots.insert_one({"_id": key, **doc})
                return True
            # Guarded by the old post: of two takers, one matches.
            taken = await self.slots.find_one_and_update(
                {"_id": key, "postId": stale}, {"$set": doc}
            )
        except DuplicateKeyError:
            return False
        return taken is not None

    async def release(self, slot: str, post_id: str) -> None:
        """Gives back a slot the post took but does not keep (a refused or twin schedule)."""
        await self.slots.delete_one({"_id": slot, "postId": post_id})

    async def release_post(self, post_id: str) -> None:
        """Frees the post's slot (it moved off it)."""
        await self.slots.delete_many({"postId": post_id})


@dataclass(frozen=True)
class QueueAnswer:
    queue: Queue
    next_slots: list[datetime]


@component
class Queues:
    _: KW_ONLY
    store: QueueStore
    accounts: AccountsClient
    clock: Clock

    async def set(
        self,
        organization_id: str,
        social_account_id: str,
        name: str,
        zone_name: str,
        slots: Sequence[Mapping[str, str]],
    ) -> QueueAnswer:
        name = queue_name(name or DEFAULT_NAME)
        time_zone(zone_name)
        weekly = weekly_slots(slots)
        account = await self._account(organization_id, social_account_id)
        if not await self.store.claim_name(organization_id, social_account_id, name):
            raise invalid(
                "queueName",
                f"the account has {MAX_QUEUES} queues, the most it can have: replace or delete one",
            )
        now = self.clock.now()
        queue = await self.store.put(
            Queue(organization_id, social_account_id, name, zone_name, weekly, now, now)
        )
        return QueueAnswer(queue, await self.free(queue, account, 5))

    async def listed(self, organization_id: str, social_account_id: str) -> list[Queue]:
        """The organization's queues (of one account, when named), by account and name."""
        return await self.store.all_of(organization_id, social_account_id)

    async def delete(self, organization_id: str, social_account_id: str, name: str) -> bool:
        return await self.store.delete(organization_id, social_account_id, queue_name(name))

    async def preview(
        self,
        organization_id: str,
        social_account_id: str,
        name: str,
        count: int,
        *,
        after: datetime | None = None,
    ) -> list[datetime]:
        """The next `count` free slots, from `after` on when given (a later week)."""
        if not 1 <= count <= 50:
            raise invalid("count", "must be 1 to 50")
        queue = await self.get(organization_id, social_account_id, name)
        account = await self._account(organization_id, social_account_id)
        return await self.free(queue, account, count, after=after)

    async def get(self, organization_id: str, social_account_id: str, name: str) -> Queue:
        queue = await self.store.get(organization_id, social_account_id, queue_name(name))
        if queue is None:
            raise invalid(
                "queueName",
                f"account '{social_account_id}' has no queue named '{name}' (set-queue makes one)",
            )
        return queue

    async def _account(self, organization_id: str, social_account_id: str) -> apb.ConnectedAccount:
        """The connected account (a 400 naming `socialAccountId` when it is not one of this
        organization's, or is disconnected)."""
        try:
            return await self.accounts.connected(
                organization_id, social_ref(social_account_id), f"account '{social_account_id}'"
            )
        except DomainError as error:
            raise invalid("socialAccountId", error.message) from None

    async def stale_at(
        self, queue: Queue, account: apb.ConnectedAccount, at: datetime
    ) -> str | None:
        """Checks that `at` is one of the queue's free slots, as preview-queue and the calendar
        show them (400 naming `date` otherwise); answers the canceled or failed post that held
        it last (None when none did). Reads only the window of `at`'s day (see `_free`)."""
        async for moment, stale in self._free(queue, account, reaching=at):
            if moment == at:
                return stale
            if moment > at:
                break
        raise invalid(
            "date",
            f"{at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ} is not a free slot of queue "
            f"'{queue.name}' (preview-queue lists them)",
        )

    async def take_at(
        self, organization_id: str, queue: Queue, at: datetime, post_id: str, stale: str | None
    ) -> Taken:
        """The slot at `at` for the post (checked free by `stale_at`); 400 naming `date` when
        another post took it meanwhile."""
        if await self.store.claim(
            organization_id, queue, at, post_id, self.clock.now(), stale=stale
        ):
            return Taken(slot_id(queue.social_account_id, at), at, post_id)
        raise invalid("date", f"the slot was taken by another post meanwhile: {queue.name}")

    async def free(
        self,
        queue: Queue,
        account: apb.ConnectedAccount,
        count: int,
        *,
        skip: int = 0,
        after: datetime | None = None,
    ) -> list[datetime]:
        """The next `count` free slots (after `skip` of them, from `after` on), at least
        RENDER_LEAD ahead; slots on a UTC day the account's daily post limit already fills
        are passed over."""
        found: list[datetime] = []
        async for moment, _ in self._free(queue, account, after):
            if skip:
                skip -= 1
                continue
            found.append(moment)
            if len(found) == count:
                break
        return found

    async def _free(
        self,
        queue: Queue,
        account: apb.ConnectedAccount,
        after: datetime | None = None,
        *,
        reaching: datetime | None = None,
    ) -> AsyncIterator[tuple[datetime, str | None]]:
        """Free instants in order (from `after` on, when later than the lead), each with the
        canceled or failed post that held it last (None when no post did).

        A day's count toward the daily limit starts at its UTC midnight with the posts stored
        there, and each free instant offered counts for its day (the next one offered assumes
        it gets a post). Step windows begin at a UTC midnight, so no day is split between two
        and a day's verdict is the same wherever the walk starts: from now, from a calendar
        week (`after`: that day's earlier free instants are counted, not offered) or at the
        day of one instant to check (`reaching`: one window read)."""
        zone = time_zone(queue.zone_name)
        limit = account.daily_post_limit if account.HasField("daily_post_limit") else 0
        now = self.clock.now()
        start = now + RENDER_LEAD
        end = start + HORIZON
        offered_from = max(start, after) if after is not None else start
        window = max(start, _midnight(max(offered_from, reaching or offered_from)))
        while window < end:
            day_start = _midnight(window)
            until = min(end, day_start + STEP)
            held, stale = await self.store.held(queue.social_account_id, day_start, until, now)
            taken = {t.at for t in held}
            per_day = await self.store.posts_per_day(
                queue.organization_id, queue.social_account_id, day_start, until
            )
            for t in held:  # a slot's post may not be stored yet (its schedule call runs)
                per_day.setdefault(t.at.astimezone(UTC).date(), set()).add(t.post_id)
            for moment in instants(queue.slots, zone, window, until):
                day = per_day.setdefault(moment.astimezone(UTC).date(), set())
                if moment in taken or (limit and len(day) >= limit):
                    continue
                day.add(f"offered:{moment.isoformat()}")
                if moment >= offered_from:
                    yield moment, stale.get(moment)
            window = until

    async def take(
        self, organization_id: str, queue: Queue, account: apb.ConnectedAccount, post_id: str
    ) -> Taken:
        """The post's slot: the one it holds already, else the earliest free one it wins."""
        mine = await self.store.slot_of(post_id)
        if mine is not None:
            return mine
        tries = 0
        async for moment, stale in self._free(queue, account):
            now = self.clock.now()
            if await self.store.claim(organization_id, queue, moment, post_id, now, stale=stale):
                return Taken(slot_id(queue.social_account_id, moment), moment, post_id)
            tries += 1
            # Refused: another post took the instant meanwhile, or a racing twin of this
            # call took a slot for this post (the post's slot is unique): look now and then.
            if tries % 8 == 1 and (mine := await self.store.slot_of(post_id)) is not None:
                return mine
            if tries > 1000:
                break
        raise invalid(
            "queueName",
            f"queue '{queue.name}' has no free slot in the next {HORIZON.days} days",
        )
