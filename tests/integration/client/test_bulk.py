"""`storypost draft|story bulk` against the real stack: a 50-row CSV made into drafts with a
progress line per row and a results file, then the same command again making nothing twice
(counted with the services' own listings); a few stories scheduled twice, made once."""

from __future__ import annotations

import csv
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storypost.publish.v1 import publish_pb2, publish_pb2_grpc
from storypost.render.v1 import render_pb2, render_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_client.bulk_files import read_results
from storypost_client.cli.bulk import default_results_path
from storypost_client.cli.exits import EXIT_ROWS_FAILED
from tests.integration.client.conftest import Ran, Storypost
from tests.support.accounts import connect_account
from tests.support.api import Api, Org

pytestmark = pytest.mark.usefixtures("process_pass_only")

# A tiny page: the test is about the bulk run, not the rendering.
TEMPLATE = (
    "<body style='margin:0;width:1080px;height:1920px;background:#{{colour}}'>"
    '<photoapp-story><h1 title="{{title}}">{{title}}</h1></photoapp-story></body>'
)
ROWS = 50
FOLDER = "Bulk test"


def write_csv(path: Path, count: int) -> Path:
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["title", "colour", "notes"])
        for n in range(1, count + 1):
            # A quote and a tag in every title: escaped, they cannot break out of the page.
            writer.writerow([f'Deal #{n} "<b>now</b>"', f"{(n * 2654435) % 0xFFFFFF:06x}", "x"])
    return path


def env_of(org: Org) -> dict[str, str]:
    return {"STORYPOST_BASE_URL": org.base_url, "STORYPOST_API_TOKEN": org.token}


async def resend_failed(storypost: Storypost, ran: Ran, command: tuple[str, ...], org: Org) -> Ran:
    """On a loaded machine a render may miss its settle time and its row fails (exit 10): the
    same command again (without --fresh) sends only the rows the results file lists as failed,
    as a user would."""
    command = tuple(item for item in command if item != "--fresh")
    for _ in range(2):
        if ran.code != EXIT_ROWS_FAILED:
            break
        ran = await storypost(*command, env=env_of(org))
    assert ran.code == 0, ran.out + ran.err
    return ran


async def drafts_in(stack: StackHandle, org: Org) -> list[render_pb2.Draft]:
    async with stack.channel("render", 15.0) as channel:
        listed = await render_pb2_grpc.RenderServiceStub(channel).ListDrafts(
            render_pb2.ListDraftsRequest(
                organization_id=org.organization_id,
                folder_name=FOLDER,
                limit=200,
                public_app_url="http://app.test",
            )
        )
    return list(listed.drafts)


async def stories_of(stack: StackHandle, org: Org) -> list[publish_pb2.Post]:
    async with stack.channel("publish", 15.0) as channel:
        listed = await publish_pb2_grpc.PublishServiceStub(channel).ListPosts(
            publish_pb2.ListPostsRequest(
                organization_id=org.organization_id,
                kinds=[publish_pb2.POST_KIND_STORY],
                limit=500,
            )
        )
    return list(listed.posts)


async def test_draft_bulk_of_50_rows_twice_makes_50_drafts(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org, tmp_path: Path
) -> None:
    template = tmp_path / "page.html"
    template.write_text(TEMPLATE)
    data = write_csv(tmp_path / "rows.csv", ROWS)
    command = (
        "draft", "bulk", "--template", str(template), "--data", str(data), "--folder", FOLDER,
        "--name", "{{title}}", "--no-preview", "--progress", "plain",
    )  # fmt: skip
    first = await storypost(*command, env=env_of(fresh_org))
    assert first.code in (0, EXIT_ROWS_FAILED), first.err
    progress = [line for line in first.err.splitlines() if line.startswith("draft bulk [")]
    assert len(progress) == ROWS
    assert progress[-1].startswith(f"draft bulk [{ROWS}/{ROWS}] row ")
    assert "created" in first.out and f"results: {default_results_path(data)}" in first.out
    await resend_failed(storypost, first, command, fresh_org)
    results = read_results(default_results_path(data))
    assert [r.row for r in results] == list(range(1, ROWS + 1))
    assert {r.status for r in results} <= {"created", "already-created"}
    uuids = {str(r.uuid) for r in results}
    assert len(uuids) == ROWS and all(uuid.UUID(u).version == 5 for u in uuids)
    assert all(r.editor_url for r in results)

    stored = await drafts_in(storypost_stack, fresh_org)
    assert {d.draft_uuid for d in stored} == uuids
    names = {d.name for d in stored}
    assert 'Deal #7 "<b>now</b>"' in names  # the name is plain text: not escaped

    # The same command again: every row is reported as made before, and nothing is made.
    ran = await storypost(*command, env=env_of(fresh_org))
    assert ran.code == 0, ran.err
    assert "already-created  50" in ran.out
    again = read_results(default_results_path(data))
    assert [(r.uuid, r.status) for r in again] == [(r.uuid, "already-created") for r in results]
    assert len(await drafts_in(storypost_stack, fresh_org)) == ROWS


async def test_story_bulk_twice_schedules_each_story_once(
    storypost: Storypost, storypost_stack: StackHandle, api: Api, tmp_path: Path
) -> None:
    org = await api.admin.create_org("bulk stories")
    account = f"bulk{uuid.uuid4().hex[:10]}"
    await connect_account(storypost_stack, org, "photoapp", account)
    template = tmp_path / "page.html"
    template.write_text(TEMPLATE)
    # The test stack allows 3 stories per account a day.
    data = write_csv(tmp_path / "stories.csv", 3)
    start = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    command = (
        "story", "bulk", "--template", str(template), "--data", str(data),
        "--account", account, "--start", start.isoformat(), "--every", "6h",
        "--progress", "plain", "--json",
    )  # fmt: skip
    ran = await resend_failed(storypost, await storypost(*command, env=env_of(org)), command, org)
    first = ran.json()
    assert sum(first["counts"].values()) == 3
    assert set(first["counts"]) <= {"scheduled", "already-scheduled"}
    dates = [r["date"] for r in first["results"]]
    assert dates == [
        (start + timedelta(hours=6 * n)).strftime("%Y-%m-%dT%H:%M:%SZ") for n in range(3)
    ]
    assert all(r["previewUrl"] for r in first["results"])

    # Sent again (--fresh ignores the results file): the API answers the same, makes nothing.
    fresh = (*command, "--fresh")
    ran = await resend_failed(storypost, await storypost(*fresh, env=env_of(org)), fresh, org)
    second = ran.json()
    assert sum(second["counts"].values()) == 3
    assert [r["uuid"] for r in second["results"]] == [r["uuid"] for r in first["results"]]
    stories = await stories_of(storypost_stack, org)
    assert sorted(p.post_uuid for p in stories) == sorted(r["uuid"] for r in first["results"])
