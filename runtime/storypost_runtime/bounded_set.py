"""A set of at most `limit` members per key, kept in one MongoDB document's array.

Adding is one conditional write: an upsert that matches the key's document only while the
member is not there and the array has room, and pushes the member. MongoDB applies it
atomically, so of racing adds exactly the room left gets in, and a member added twice is there
once. When it matches nothing, its insert meets the key's document (a duplicate `_id`), and
the document says which case it was: the member is there (added before, or by a twin): added;
there is room (the document was created, or a member removed, after the write looked): the
write runs again; else the set is full.

A member is a string, stored as itself, or, with `member_field`, a document that names it in
that field (and may carry more, such as when it was added).
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from storypost_runtime.component import component
from storypost_runtime.mongo import Document

# Each round that finds room after a lost race means another write landed: a few settle it.
_ROUNDS = 4


@component
class BoundedSet:
    _: KW_ONLY
    collection: AsyncCollection[Document]
    # The key document's array field that holds the members.
    array: str
    limit: int
    # Members stored as documents: the field naming the member (None: stored as strings).
    member_field: str | None = None

    async def add(self, key: str, member: str, **extra: Any) -> bool:
        """Counts `member` in the key's set (with `extra` fields, for document members);
        False when `limit` others are there. A member already there is always counted."""
        for _ in range(_ROUNDS):
            try:
                await self.collection.update_one(
                    {
                        "_id": key,
                        self._member_path: {"$ne": member},
                        f"{self.array}.{self.limit - 1}": {"$exists": False},
                    },
                    {"$push": {self.array: self._entry(member, extra)}},
                    upsert=True,
                )
            except DuplicateKeyError:
                held = await self.members(key)
                if member in held:
                    return True
                if len(held) < self.limit:
                    continue  # created, or a member removed, after the write looked
                return False
            return True
        return False

    async def entries(self, key: str) -> list[Any]:
        """The stored entries of the key's set (strings, or documents)."""
        doc = await self.collection.find_one({"_id": key}, {self.array: 1})
        return list((doc or {}).get(self.array) or [])

    async def members(self, key: str) -> list[str]:
        entries = await self.entries(key)
        if self.member_field is None:
            return entries
        return [entry[self.member_field] for entry in entries]

    async def remove(self, key: str, *members: str) -> None:
        """Takes the members out of the key's set (those not there are no matter)."""
        match: Any = {"$in": list(members)}
        if self.member_field is not None:
            match = {self.member_field: match}
        await self.collection.update_one({"_id": key}, {"$pull": {self.array: match}})

    @property
    def _member_path(self) -> str:
        return self.array if self.member_field is None else f"{self.array}.{self.member_field}"

    def _entry(self, member: str, extra: dict[str, Any]) -> Any:
        if self.member_field is None:
            return member
        return {self.member_field: member, **extra}
