"""publish-svc's backlog (storypost_runtime.backlog): posts due and not started, that is open,
due, and leased by no replica. It grows when the scheduler stalls or too few replicas run; the
`status_due` index serves both queries."""

from __future__ import annotations

from datetime import datetime

from pymongo.asynchronous.collection import AsyncCollection

from publish_svc.model import OPEN
from storypost_runtime.backlog import Backlog
from storypost_runtime.mongo import Document

POSTS_DUE = "posts_due"


def posts_due(posts: AsyncCollection[Document]) -> Backlog:
    def query(now: datetime) -> Document:
        return {"status": {"$in": list(OPEN)}, "dueAt": {"$lte": now}, "leaseUntil": {"$lte": now}}

    return Backlog(POSTS_DUE, posts, query, "dueAt")
