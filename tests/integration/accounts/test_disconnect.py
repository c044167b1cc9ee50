"""A platform answering token-expired turns the account `disconnected: true`; connecting it
again clears the flag. Credits and daily limits over gRPC against the running stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import grpc
import pytest

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_runtime.service_auth import PUBLISH_SVC
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration


@pytest.fixture
async def accounts(
    storypost_stack: StackHandle,
) -> AsyncIterator[account_pb2_grpc.AccountServiceAsyncStub]:
    # Acts as publish-svc: tokens, reservations and credits answer only publish-svc.
    channel = storypost_stack.channel("account", 15.0, caller=PUBLISH_SVC)
    yield account_pb2_grpc.AccountServiceStub(channel)
    await channel.close()


async def social_entry(api: Api, org: Org, social_account_id: str) -> dict[str, object]:
    answer = await api.call(org, "list-social-accounts", {})
    assert answer.status_code == 200
    entry: dict[str, object] = next(
        s for s in answer.json()["socialAccounts"] if s["socialAccountId"] == social_account_id
    )
    return entry


async def test_a_token_expired_switch_turns_the_account_disconnected(
    api: Api,
    fresh_org: Org,
    storypost_stack: StackHandle,
    accounts: account_pb2_grpc.AccountServiceAsyncStub,
) -> None:
    mention = await connect_account(storypost_stack, fresh_org, "photoapp", "expiring.one")
    driver = await connect_account(storypost_stack, fresh_org, "pinboard", "expiring.pins")
    org_id = fresh_org.organization_id
    assert (await social_entry(api, fresh_org, mention.social_account_id))["disconnected"] is False
    async with sandbox_switch(storypost_stack, "photoapp", "token-expired", account="expiring.one"):
        # Resolving a mention with the refused token disconnects the account…
        with pytest.raises(grpc.aio.AioRpcError) as none_left:
            await accounts.ResolveMention(
                pb.ResolveMentionRequest(organization_id=org_id, username="natgeo")
            )
        assert none_left.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    entry = await social_entry(api, fresh_org, mention.social_account_id)
    assert entry["disconnected"] is True
    async with sandbox_switch(storypost_stack, "pinboard", "token-expired"):
        # …and so does a refused token refresh (what a driver's retry after a 401 does).
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await accounts.GetAccessToken(
                pb.GetAccessTokenRequest(
                    organization_id=org_id,
                    account=pb.AccountRef(social_account_id=driver.social_account_id),
                    force_refresh=True,
                )
            )
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert (await social_entry(api, fresh_org, driver.social_account_id))["disconnected"] is True
    # Connecting again clears it.
    await connect_account(storypost_stack, fresh_org, "photoapp", "expiring.one")
    assert (await social_entry(api, fresh_org, mention.social_account_id))["disconnected"] is False
    resolved = await accounts.ResolveMention(
        pb.ResolveMentionRequest(organization_id=org_id, username="natgeo")
    )
    assert resolved.username == "natgeo" and resolved.photoapp_user_id.isdigit()


async def test_publish_svc_contracts_over_grpc(
    fresh_org: Org,
    storypost_stack: StackHandle,
    accounts: account_pb2_grpc.AccountServiceAsyncStub,
) -> None:
    org_id = fresh_org.organization_id
    clip = await connect_account(storypost_stack, fresh_org, "clipapp", "contract.clips")
    by_clipapp = pb.AccountRef(clipapp_account_id=clip.platform_account_id)
    found = await accounts.GetConnectedAccount(
        pb.GetConnectedAccountRequest(organization_id=org_id, account=by_clipapp)
    )
    assert found.social_account_id == clip.social_account_id
    assert found.connection == pb.CONNECTION_DIRECT and found.daily_post_limit == 10
    token = await accounts.GetAccessToken(
        pb.GetAccessTokenRequest(organization_id=org_id, account=by_clipapp)
    )
    assert token.access_token and token.platform == "CLIPAPP"
    post_uuid = str(uuid.uuid4())
    stamp = pb.DailyPostRequest(organization_id=org_id, account=by_clipapp, post_uuid=post_uuid)
    stamp.post_date.FromDatetime(datetime.now(UTC))
    first = await accounts.ReserveDailyPost(stamp)
    again = await accounts.ReserveDailyPost(stamp)
    assert (first.reserved, first.used, first.limit) == (True, 1, 10)
    assert (again.reserved, again.already_reserved, again.used) == (True, True, 1)
    released = await accounts.ReleaseDailyPost(stamp)
    assert (released.reserved, released.used) == (False, 0)
    balance = await accounts.GetCredits(pb.GetCreditsRequest(organization_id=org_id))
    assert balance.balance > 0  # a new organization starts with credits
    taken = await accounts.ConsumeCredit(
        pb.ConsumeCreditRequest(organization_id=org_id, post_uuid=post_uuid)
    )
    assert taken.consumed and taken.balance == balance.balance - 1
    assert (
        await accounts.ConsumeCredit(
            pb.ConsumeCreditRequest(organization_id=org_id, post_uuid=post_uuid)
        )
    ).already_consumed
    marked = await accounts.MarkAccountDisconnected(
        pb.MarkAccountDisconnectedRequest(
            organization_id=org_id, account=by_clipapp, reason="401 from clipapp"
        )
    )
    assert marked.disconnected and marked.disconnect_reason == "401 from clipapp"


def run_cli(stack: StackHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "storypost_cli", *args],
        env={**os.environ, **stack.env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_cli_connects_switches_and_sets_credits(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    org_id = fresh_org.organization_id
    done = run_cli(
        storypost_stack, "sandbox", "connect", "--org", org_id, "--platform", "photoapp",
        "--username", "cli.owner", "--linknet-destination", "55:CLI Page:page",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    account = json.loads(done.stdout)
    assert account["username"] == "cli.owner" and account["platform"] == "PHOTOAPP"
    assert account["linknetDestinations"] == [{"id": "55", "name": "CLI Page", "type": "page"}]
    assert "token" not in done.stdout.lower()
    users = (await api.call(fresh_org, "list-photoapp-users", {})).json()["photoappUsers"]
    assert [u["photoappUsername"] for u in users] == ["cli.owner"]
    switched = run_cli(
        storypost_stack, "sandbox", "set", "--platform", "photoapp", "--account", "cli.owner",
        "--mode", "fail", "--message", "media rejected",
    )  # fmt: skip
    assert switched.returncode == 0, switched.stderr
    assert json.loads(switched.stdout)["message"] == "media rejected"
    assert run_cli(storypost_stack, "sandbox", "reset", "--platform", "photoapp").returncode == 0
    credits = run_cli(storypost_stack, "admin", "set-credits", "--org", org_id, "--credits", "0")
    assert credits.returncode == 0, credits.stderr
    assert json.loads(credits.stdout) == {"organizationId": org_id, "credits": 0}
    unknown = run_cli(storypost_stack, "admin", "set-credits", "--org", "nope", "--credits", "1")
    assert unknown.returncode == 3 and "not found" in unknown.stderr
    assert await published(storypost_stack, "photoapp", "cli.owner") == []
