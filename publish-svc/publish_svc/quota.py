"""The story quota: 100 story posts per photoapp account in any rolling 24 hours.

runtime's rolling quota keyed by the platform account (storypost_runtime.quota): the quota
holds when schedules race, reserving twice for one post is a no-op, and a post that is not
stored after all (its design was refused) gives its slot back.
"""

from __future__ import annotations

from datetime import timedelta

from pymongo.asynchronous.collection import AsyncCollection

from storypost_runtime.mongo import Document
from storypost_runtime.quota import RollingQuota

WINDOW = timedelta(hours=24)


class StoryQuota(RollingQuota):
    """The rolling quota with the story window; `per_day` is its limit."""

    def __init__(self, slots: AsyncCollection[Document], per_day: int) -> None:
        super().__init__(slots=slots, limit=per_day, window=WINDOW)

    @property
    def per_day(self) -> int:
        return self.limit

    @per_day.setter
    def per_day(self, value: int) -> None:
        self.limit = value
