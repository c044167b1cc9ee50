"""The workspace's queues as the app shows them: each queue's free slots in a period (the
calendar's week), the queues a draft can be added to (photoapp accounts, the gallery), and a
queue's weekly slots as one line of times per weekday (the queue editor)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from edge.web.views import as_datetime
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost_runtime.vocabulary import PHOTOAPP

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# PreviewQueue's most: the calendar shows the first 50 free slots of a queue from the week's start.
PREVIEW_MOST = 50
# A queue choice's value in a form: "<socialAccountId>/<queueName>" (account ids have no "/").
SEPARATOR = "/"
TIME_SHAPE = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True)
class FreeSlot:
    """One free slot of one queue: the instant and whose queue it is."""

    at: datetime
    social_account_id: str
    queue_name: str
    account: str


@dataclass(frozen=True)
class QueueChoice:
    """A queue a draft can go to: a photoapp account's queue."""

    value: str
    label: str
    username: str
    queue_name: str


def account_label(account: apb.ConnectedAccount) -> str:
    return f"@{account.username}" if account.username else account.display_name


def free_slots(
    publish: publish_pb2_grpc.PublishServiceStub,
    accounts: Mapping[str, apb.ConnectedAccount],
    organization_id: str,
    start: datetime,
    end: datetime,
) -> list[FreeSlot]:
    """The free slots in [start, end) of every queue of the workspace, earliest first: each
    queue's next PREVIEW_MOST free slots from `start` on (asked for in parallel), those in the
    period. A queue whose preview fails now (its account disconnected) shows none."""
    queues = publish.ListQueues(pb.ListQueuesRequest(organization_id=organization_id)).queues
    after = Timestamp()
    after.FromDatetime(start)
    calls = [
        (
            queue,
            publish.PreviewQueue.future(
                pb.PreviewQueueRequest(
                    queue=pb.QueueRef(
                        organization_id=organization_id,
                        social_account_id=queue.social_account_id,
                        queue_name=queue.queue_name,
                    ),
                    count=PREVIEW_MOST,
                    after=after,
                )
            ),
        )
        for queue in queues
        if queue.social_account_id in accounts
    ]
    found: list[FreeSlot] = []
    for queue, call in calls:
        try:
            slots = call.result().slots
        except grpc.RpcError:
            continue
        account = account_label(accounts[queue.social_account_id])
        for stamp in slots:
            at = as_datetime(stamp)
            if at is not None and start <= at < end:
                found.append(FreeSlot(at, queue.social_account_id, queue.queue_name, account))
    return sorted(found, key=lambda slot: (slot.at, slot.account, slot.queue_name))


def connected_accounts(
    accounts: account_pb2_grpc.AccountServiceStub, organization_id: str
) -> list[apb.ConnectedAccount]:
    return list(
        accounts.ListConnectedAccounts(
            apb.ListConnectedAccountsRequest(organization_id=organization_id)
        ).accounts
    )


def story_queues(
    queues: Iterable[pb.Queue], accounts: Iterable[apb.ConnectedAccount]
) -> list[QueueChoice]:
    """The queues of the workspace's directly connected, not disconnected photoapp accounts:
    where a draft can go as a story."""
    usernames = {
        a.social_account_id: a.username
        for a in accounts
        if a.platform == PHOTOAPP.name
        and a.connection == apb.CONNECTION_DIRECT
        and not a.disconnected
        and a.username
    }
    return [
        QueueChoice(
            value=f"{q.social_account_id}{SEPARATOR}{q.queue_name}",
            label=f"@{usernames[q.social_account_id]} · {q.queue_name}",
            username=usernames[q.social_account_id],
            queue_name=q.queue_name,
        )
        for q in queues
        if q.social_account_id in usernames
    ]


def chosen_queue(choices: Sequence[QueueChoice], value: str) -> QueueChoice | None:
    return next((choice for choice in choices if choice.value == value), None)


def times_by_day(queue: pb.Queue | None) -> dict[str, str]:
    """The queue's slots as the editor's fields: weekday -> "09:30, 17:00"."""
    days: dict[str, list[str]] = {day: [] for day in WEEKDAYS}
    for slot in queue.slots if queue is not None else ():
        days.setdefault(slot.weekday, []).append(slot.time)
    return {day: ", ".join(times) for day, times in days.items()}


def parse_slots(entered: Mapping[str, str]) -> tuple[list[pb.QueueSlot], str]:
    """The editor's per-weekday times ("9:30, 17:00", commas or spaces) as slots, and the
    first problem found (empty when none)."""
    slots: list[pb.QueueSlot] = []
    for day in WEEKDAYS:
        for text in re.split(r"[,\s]+", entered.get(day, "").strip()):
            if not text:
                continue
            shape = TIME_SHAPE.match(text)
            if shape is None:
                return [], f"“{text}” on {day.capitalize()} is not a time: write times as HH:MM."
            slots.append(pb.QueueSlot(weekday=day, time=f"{int(shape[1]):02d}:{shape[2]}"))
    if not slots:
        return [], "Give the queue at least one time on one day."
    return slots, ""
