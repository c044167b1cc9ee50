"""The app's queue helpers: the queue editor's per-weekday times read into slots and back,
and which queues a draft can be added to (directly connected, connected photoapp accounts)."""

from __future__ import annotations

from edge.web.queue_slots import chosen_queue, parse_slots, story_queues, times_by_day
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb


def test_times_per_weekday_become_slots_and_back() -> None:
    slots, problem = parse_slots({"monday": "9:30, 17:00", "saturday": " 11:00 ", "sunday": ""})
    assert problem == ""
    assert [(s.weekday, s.time) for s in slots] == [
        ("monday", "09:30"),
        ("monday", "17:00"),
        ("saturday", "11:00"),
    ]
    days = times_by_day(pb.Queue(slots=slots))
    assert days["monday"] == "09:30, 17:00" and days["saturday"] == "11:00"
    assert days["tuesday"] == ""


def test_a_bad_time_or_no_time_is_named() -> None:
    assert parse_slots({"friday": "09:30 25:00"}) == (
        [],
        "“25:00” on Friday is not a time: write times as HH:MM.",
    )
    assert parse_slots({"monday": "9h30"})[1].startswith("“9h30” on Monday")
    assert parse_slots({}) == ([], "Give the queue at least one time on one day.")


def test_only_live_direct_photoapp_accounts_queues_take_drafts() -> None:
    accounts = [
        apb.ConnectedAccount(
            social_account_id="sa_1",
            platform="PHOTOAPP",
            connection=apb.CONNECTION_DIRECT,
            username="shop",
        ),
        apb.ConnectedAccount(
            social_account_id="sa_2",
            platform="PHOTOAPP",
            connection=apb.CONNECTION_DIRECT,
            username="gone",
            disconnected=True,
        ),
        apb.ConnectedAccount(
            social_account_id="sa_3",
            platform="LINKNET",
            connection=apb.CONNECTION_SOCIAL,
            username="pages",
        ),
    ]
    queues = [
        pb.Queue(social_account_id=account, queue_name=name)
        for account, name in (("sa_1", "default"), ("sa_1", "a/b"), ("sa_2", "x"), ("sa_3", "y"))
    ]
    choices = story_queues(queues, accounts)
    assert [(c.value, c.label, c.username, c.queue_name) for c in choices] == [
        ("sa_1/default", "@shop · default", "shop", "default"),
        ("sa_1/a/b", "@shop · a/b", "shop", "a/b"),
    ]
    assert chosen_queue(choices, "sa_1/a/b") == choices[1]
    assert chosen_queue(choices, "sa_3/y") is None
