"""Sustained load: 60 requests per minute on each of 100 organizations, mixed across procedures.

Issue #12 item 8. Starts the whole embedded stack (production settings: 60 requests per minute
per organization) unless --edge-url/--account-addr name a running one, makes the organizations
(each with a connected photoapp and linknet account, a draft, a story and a social post to
poll), then paces every organization at exactly its rate — open loop: a request is sent at
its time whether or not earlier ones have answered, so a slow stack meets the same load. The
mix is what callers do most (polling statuses, listing accounts, uuids, temp blob URLs) with
a slice of renders (stories due within minutes, drafts) and cancels.

Any answer other than 200 is an error, except the documented 429s (rate limit, busy render
slots), which are counted apart. Prints progress every 30 s and, last, one line per
procedure: count, errors, 429s, p50 and p99 latency. Exit code 1 when there were errors.

Each organization's stories go to as many photoapp accounts as the run needs to keep every
account within the daily limits (tests/support/accounts_pool.py: the sandbox network's, the
story quota); a story call no account has room for is not sent (another call is picked).

    .venv/bin/python bench/load.py              # 10 minutes
    .venv/bin/python bench/load.py --quick      # 1 minute
    .venv/bin/python bench/load.py --without-renders   # the request path alone
    .venv/bin/python bench/load.py --minutes 3 --orgs 20
    .venv/bin/python bench/load.py --smoke      # 2 organizations for 6 s: does it run?
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import math
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the account pool lives in tests/support/

from storypost.account.v1 import account_pb2 as pb  # noqa: E402
from storypost.account.v1 import account_pb2_grpc  # noqa: E402
from storypost.testing.stack import stack_channel  # noqa: E402
from storypost_cli.config import default_data_dir  # noqa: E402
from storypost_cli.sandbox import connect_account  # noqa: E402
from storypost_cli.stack import EmbeddedStack, StackPorts  # noqa: E402
from storypost_cli.stack.credentials import admin_credential  # noqa: E402
from tests.support.accounts_pool import STORY as SCHEDULE_STORY  # noqa: E402
from tests.support.accounts_pool import AccountPool  # noqa: E402

STORY = (
    "<photoapp-story></photoapp-story><div style='width:1080px;height:1920px;background:#c63;"
    "display:flex;flex-direction:column;align-items:center;gap:40px;padding:300px 40px;"
    "box-sizing:border-box'><h1 style='font:bold 96px sans-serif;color:#fff'>Load</h1>"
    "<photoapp-hashtag hashtag='storypost'></photoapp-hashtag></div>"
)
PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
# Procedure -> weight in the mix (per mille). Renders are a small slice: on the 2-core
# development machine one render costs as much CPU as a few hundred status calls.
MIX = {
    "status-photoapp-story": 250,
    "status-draft": 140,
    "generate-uuid": 140,
    "list-photoapp-users": 100,
    "status-social-post": 80,
    "create-temp-blob-upload-url": 80,
    "list-social-accounts": 50,
    "list-clipapp-accounts": 50,
    "upload-temp-blob": 50,
    "create-connect-link": 20,
    "schedule-photoapp-story": 20,
    "cancel-photoapp-story": 10,
    "create-draft": 10,
}
# What renders (a Chromium page each, seconds of CPU): --without-renders leaves them out, to
# measure the request path alone.
RENDERING = {"schedule-photoapp-story", "cancel-photoapp-story", "create-draft"}
# A story is canceled only while its date is at least this far ahead (the call itself may
# wait behind others for seconds).
CANCEL_MARGIN_SECONDS = 60
# A 429 is the documented answer to a full rate-limit bucket or busy render slots.
DOCUMENTED = {429}


@dataclass
class Org:
    organization_id: str
    token: str
    base_url: str
    # Its photoapp accounts: each story call takes the least-used one with room.
    photoapp: AccountPool = field(default_factory=lambda: AccountPool("photoapp"))
    social_account_id: str = ""
    draft_uuid: str = ""
    story_uuid: str = ""
    social_uuid: str = ""
    links: int = 0
    # Stories this run scheduled that may still be canceled: uuid -> their date.
    cancelable: dict[str, datetime] = field(default_factory=dict)


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    errors: list[str] = field(default_factory=list)
    sent: int = 0
    # Latencies of the calls that do not render, in the order they were answered: each
    # progress line reports the ones answered since the line before.
    light: list[float] = field(default_factory=list)

    def record(self, procedure: str, status: int, seconds: float, text: str) -> None:
        self.latencies[procedure].append(seconds)
        if procedure not in RENDERING:
            self.light.append(seconds)
        self.statuses[procedure][status] += 1
        if status != 200 and status not in DOCUMENTED:
            self.errors.append(f"{procedure}: {status} {text[:160]}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def body_for(procedure: str, org: Org, rng: random.Random) -> dict[str, Any] | None:
    """The request of one call of `procedure` for `org` (None: nothing to do, pick again)."""
    key = str(uuid.uuid4())
    if procedure == "status-photoapp-story":
        return {"storyPostUuid": org.story_uuid}
    if procedure == "status-draft":
        return {"draftUuid": org.draft_uuid}
    if procedure == "status-social-post":
        return {"socialPostUuid": org.social_uuid}
    if procedure == "create-temp-blob-upload-url":
        return {"tempBlobUuid": key, "contentType": "video/mp4", "contentLengthBytes": 1 << 20}
    if procedure == "upload-temp-blob":
        return {"tempBlobUuid": key, "contentBase64": PNG, "contentType": "image/png"}
    if procedure == "create-connect-link":
        if org.links >= 90:  # an organization has at most 100
            return None
        org.links += 1
        return {"connectLinkUuid": key, "description": "load"}
    if procedure == "schedule-photoapp-story":
        account = org.photoapp.take(SCHEDULE_STORY)
        if account is None:  # every account of the organization at a daily limit
            return None
        date = datetime.now(UTC) + timedelta(seconds=rng.uniform(120, 480))
        return {"storyPostUuid": key, "photoappUsername": account, "html": STORY,
                "date": iso(date)}  # fmt: skip
    if procedure == "cancel-photoapp-story":
        # Only stories well before their date: canceling a published one is a documented 400.
        soon = datetime.now(UTC) + timedelta(seconds=CANCEL_MARGIN_SECONDS)
        for gone in [k for k, date in org.cancelable.items() if date < soon]:
            del org.cancelable[gone]
        if not org.cancelable:
            return None
        chosen = rng.choice(sorted(org.cancelable))
        del org.cancelable[chosen]
        return {"storyPostUuid": chosen}
    if procedure == "create-draft":
        return {"draftUuid": key, "html": STORY, "name": "load"}
    return {}


async def call(
    http: aiohttp.ClientSession, stats: Stats, org: Org, procedure: str, body: dict[str, Any]
) -> None:
    started = time.perf_counter()
    try:
        async with http.post(
            f"{org.base_url}/{procedure}",
            json=body,
            headers={"Authorization": f"Bearer {org.token}"},
        ) as answer:
            text = await answer.text()
            status = answer.status
    except (aiohttp.ClientError, TimeoutError) as error:
        stats.record(procedure, 0, time.perf_counter() - started, f"{type(error).__name__}")
        return
    stats.record(procedure, status, time.perf_counter() - started, text)
    if procedure == "schedule-photoapp-story" and status == 200:
        # Cancelable once accepted: a cancel sent before the schedule's answer could arrive
        # first and find no story (a documented 400, but the bench's own mistake).
        org.cancelable[body["storyPostUuid"]] = datetime.fromisoformat(body["date"])


async def drive(
    http: aiohttp.ClientSession,
    stats: Stats,
    org: Org,
    rate: float,
    seconds: float,
    seed: int,
    without_renders: bool,
) -> None:
    """Open loop: one call every 60/rate seconds from a random phase, whatever the answers."""
    rng = random.Random(seed)
    names = [name for name in MIX if not (without_renders and name in RENDERING)]
    weights = [MIX[name] for name in names]
    every = 60.0 / rate
    start = time.monotonic() + rng.uniform(0, every)
    pending: set[asyncio.Task[None]] = set()
    n = 0
    while (due := start + n * every) < start + seconds:
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        n += 1
        body = None
        while body is None:
            procedure = rng.choices(names, weights)[0]
            body = body_for(procedure, org, rng)
        stats.sent += 1
        task = asyncio.create_task(call(http, stats, org, procedure, body))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)


def stories_per_org(args: argparse.Namespace) -> int:
    """The stories one organization's accounts get room for: its set-up story and what the
    mix makes in the run, three standard deviations above the mean (more are not sent)."""
    if args.without_renders:
        return 1
    share = MIX["schedule-photoapp-story"] / sum(MIX.values())
    expected: float = args.rate * args.minutes * share
    return 1 + math.ceil(expected + 3 * math.sqrt(expected * (1 - share)))


async def make_org(
    accounts: account_pb2_grpc.AccountServiceAsyncStub,
    http: httpx.AsyncClient,
    edge_url: str,
    n: int,
    stories: int,
    env: Mapping[str, str],
) -> Org:
    created = await accounts.CreateOrganization(pb.CreateOrganizationRequest(name=f"load {n}"))
    org_id = created.organization_id
    issued = await accounts.CreateApiCredential(
        pb.CreateApiCredentialRequest(organization_id=org_id, name="load")
    )
    # The limits of the stack's settings (a running stack's: this process's environment).
    org = Org(
        org_id, issued.token, f"{edge_url}/o/{org_id}/api/v1", AccountPool("photoapp", env=env)
    )
    for m in range(org.photoapp.accounts_for({SCHEDULE_STORY: stories})):
        name = org.photoapp.add(f"load{n}x{m}x{uuid.uuid4().hex[:6]}")
        await connect_account(accounts, http, org_id, "photoapp", name)
    story_account = org.photoapp.take(SCHEDULE_STORY)
    assert story_account is not None
    social = await connect_account(
        accounts, http, org_id, "linknet", f"loadln{n}x{uuid.uuid4().hex[:6]}", connection="social"
    )
    org.social_account_id = social.social_account_id
    later = iso(datetime.now(UTC) + timedelta(days=1))
    org.draft_uuid, org.story_uuid, org.social_uuid = (str(uuid.uuid4()) for _ in range(3))
    setup = [
        ("create-draft", {"draftUuid": org.draft_uuid, "html": STORY}),
        ("schedule-photoapp-story", {"storyPostUuid": org.story_uuid, "date": later,
                                     "photoappUsername": story_account, "html": STORY}),
        ("schedule-social-post", {"socialPostUuid": org.social_uuid, "date": later,
                                  "socialAccountId": org.social_account_id,
                                  "postType": "IMAGE_POST", "html": STORY, "text": "load"}),
    ]  # fmt: skip
    for procedure, body in setup:
        for _attempt in range(10):
            answer = await http.post(
                f"{org.base_url}/{procedure}", json=body,
                headers={"Authorization": f"Bearer {org.token}"}, timeout=130,
            )  # fmt: skip
            if answer.status_code == 200:
                break
            await asyncio.sleep(2)
        else:
            raise RuntimeError(f"setup of {org_id}: {procedure} {answer.status_code} {answer.text}")
    return org


async def progress(stats: Stats, started: float, seconds: float) -> None:
    """A line every tenth of the run (at most every 30 s): counts so far, and the p50/p99 of
    the calls that do not render answered since the line before (when the slow ones came)."""
    seen = 0
    while True:
        await asyncio.sleep(min(30.0, seconds / 10))
        elapsed = time.monotonic() - started
        done = sum(len(v) for v in stats.latencies.values())
        window, seen = stats.light[seen:], len(stats.light)
        print(
            f"  {elapsed:5.0f}/{seconds:.0f} s: {stats.sent} sent, {done} answered, "
            f"{len(stats.errors)} errors, "
            f"{sum(c[429] for c in stats.statuses.values())} x 429; light calls p50 "
            f"{percentile(window, 0.5):.0f} ms, p99 {percentile(window, 0.99):.0f} ms",
            file=sys.stderr,
            flush=True,
        )


def report(
    stats: Stats, orgs: list[Org], rate: float, seconds: float, without_renders: bool
) -> None:
    total = sum(len(v) for v in stats.latencies.values())
    print(f"\nload: {len(orgs)} organizations x {rate:g} requests/min for {seconds / 60:g} min"
          + (" (without renders)" if without_renders else ""))  # fmt: skip
    print(f"answered {total} of {stats.sent} sent ({total / seconds:.1f}/s)")
    per_account = [n for org in orgs for n in org.photoapp.posts().values()]
    held = sum(org.photoapp.held_back[SCHEDULE_STORY] for org in orgs)
    limit = min(limit.posts for limit in orgs[0].photoapp.limits(SCHEDULE_STORY)) if orgs else 0
    print(
        f"stories per photoapp account: at most {max(per_account, default=0)} (limit {limit}), "
        f"{len(per_account)} accounts; not sent, accounts full: {held}"
    )
    if stats.errors:
        print(f"errors: {len(stats.errors)}; first ones:")
        for line in stats.errors[:10]:
            print(f"  {line}")
    header = f"{'procedure':30} {'count':>7} {'errors':>7} {'429':>5} {'p50 ms':>8} {'p99 ms':>8}"
    print(header)
    for procedure in sorted(stats.latencies):
        values = stats.latencies[procedure]
        statuses = stats.statuses[procedure]
        errors = sum(n for s, n in statuses.items() if s != 200 and s not in DOCUMENTED)
        print(
            f"{procedure:30} {len(values):7d} {errors:7d} {statuses[429]:5d} "
            f"{percentile(values, 0.5):8.0f} {percentile(values, 0.99):8.0f}"
        )
    every = [v for values in stats.latencies.values() for v in values]
    print(f"{'all':30} {len(every):7d} {len(stats.errors):7d} "
          f"{sum(c[429] for c in stats.statuses.values()):5d} "
          f"{percentile(every, 0.5):8.0f} {percentile(every, 0.99):8.0f}")  # fmt: skip


async def run(args: argparse.Namespace, edge_url: str, env: Mapping[str, str]) -> int:
    """`env`: the stack's client settings (account-svc's address, the operator's key)."""
    seconds = args.minutes * 60
    limits = httpx.Limits(max_connections=args.orgs * 4, max_keepalive_connections=args.orgs)
    async with (
        httpx.AsyncClient(timeout=130, limits=limits) as http,
        stack_channel(env, "account", 30) as channel,
    ):
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        print(f"making {args.orgs} organizations ...", file=sys.stderr, flush=True)
        started = time.monotonic()
        orgs: list[Org] = []
        stories = stories_per_org(args)
        for first in range(0, args.orgs, 10):
            orgs += await asyncio.gather(
                *(make_org(accounts, http, edge_url, n, stories, env)
                  for n in range(first, min(first + 10, args.orgs)))
            )  # fmt: skip
        print(f"  ready in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        # Let every bucket fill up again after the set-up calls.
        await asyncio.sleep(1 if args.smoke else 10)
        stats = Stats()
        started = time.monotonic()
        ticker = asyncio.create_task(progress(stats, started, seconds))
        # The paced calls go through aiohttp: httpx's pool spends a whole core of its own at
        # this rate (hundreds of connections), so the client, not the stack, fell behind.
        connector = aiohttp.TCPConnector(limit=args.orgs * 4)
        timeout = aiohttp.ClientTimeout(total=130)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            await asyncio.gather(
                *(drive(session, stats, org, args.rate, seconds, args.seed + n,
                        args.without_renders)
                  for n, org in enumerate(orgs))
            )  # fmt: skip
        ticker.cancel()
    report(stats, orgs, args.rate, seconds, args.without_renders)
    return 1 if stats.errors else 0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="duration (default 10)")
    parser.add_argument("--quick", action="store_true", help="a 1-minute run")
    parser.add_argument(
        "--smoke", action="store_true", help="2 organizations for 6 s (does it run? no figures)"
    )
    parser.add_argument("--orgs", type=int, default=100)
    parser.add_argument("--rate", type=float, default=60.0, help="requests/min per organization")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--without-renders",
        action="store_true",
        help="leave out the calls that render (schedule, cancel, create-draft)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="run the stack in this folder and keep it (its logs, its database) after the run",
    )
    parser.add_argument("--edge-url", help="a running stack's edge (with --account-addr)")
    parser.add_argument(
        "--account-addr",
        help="a running stack's account-svc (admin calls, signed with STORYPOST_SERVICE_KEY "
        "or the key of `make run`'s stack)",
    )
    args = parser.parse_args()
    if args.quick:
        args.minutes = 1.0
    if args.smoke:
        args.minutes, args.orgs = 0.1, 2
    if args.edge_url and args.account_addr:
        signer_key = os.environ.get("STORYPOST_SERVICE_KEY") or admin_credential(default_data_dir())
        external = {"STORYPOST_ACCOUNT_ADDR": args.account_addr}
        external["STORYPOST_SERVICE_KEY"] = signer_key or ""
        return await run(args, args.edge_url.rstrip("/"), external)
    with contextlib.ExitStack() as cleanup:
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            folder = args.keep
        else:
            folder = Path(
                cleanup.enter_context(tempfile.TemporaryDirectory(prefix="storypost-load-"))
            )
        stack = EmbeddedStack(
            folder, StackPorts.free(), extra_env={"STORYPOST_LOG_LEVEL": "warning"}
        )
        print(f"starting the stack in {folder} ...", file=sys.stderr, flush=True)
        async with stack:
            return await run(args, stack.edge_url, stack.env())


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
