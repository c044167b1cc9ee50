"""Issue #12 item 7 (secrets): API tokens, platform tokens, connect-link tokens, blob keys,
webhook signing secrets, passwords and session tokens never appear in any component's log,
in an error answer, on a metrics endpoint, or stored plain in MongoDB.

The test first walks every path that handles one of them (wrong, revoked and foreign tokens,
a connect flow, a publish with a token refresh, a signed webhook delivery, a connect page and
a blob download, a user sign-in), then looks everywhere.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from typing import Any

import grpc
import httpx
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from account_svc.config import DEV_TOKEN_KEY
from account_svc.connections.token_crypto import TokenCipher
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost.webhook.v1 import webhook_pb2 as wpb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.service_auth import EDGE
from tests.reliability.support import (
    IMAGE_STORY,
    LoopbackReceiver,
    username,
    wait_status,
)
from tests.support.accounts import connect_account, sandbox_url
from tests.support.api import Api, upload_blob

pytestmark = pytest.mark.integration

Db = AsyncDatabase[dict[str, Any]]
METRICS = ("edge", "account", "render", "publish", "webhook", "sandbox")
PASSWORD = "correct horse battery staple 42"
SIGNING_SECRET = "whsec-" + uuid.uuid4().hex


async def walk_every_secret_path(
    stack: StackHandle, api: Api, receiver: LoopbackReceiver
) -> dict[str, str]:
    """Exercises the code paths that handle secrets; returns the plain secrets it met."""
    secrets: dict[str, str] = {"s3 secret key": stack.env["STORYPOST_S3_SECRET_KEY"]}
    # The operator's signing key (name:key): the key part must never be seen.
    secrets["service signing key"] = stack.env["STORYPOST_SERVICE_KEY"].partition(":")[2]
    org = await api.admin.create_org("secrets org")
    other = await api.admin.create_org("secrets other org")
    secrets |= {"api token": org.token, "other api token": other.token}
    revoked = await api.admin.create_token(org.organization_id, "to revoke")
    secrets["revoked api token"] = revoked.token
    await api.admin.revoke_token(org.organization_id, revoked.credential_id)
    await asyncio.sleep(1.2)  # the edge's auth cache (1 s here)
    unknown = "sp_" + "A" * 43
    for token in (revoked.token, unknown, other.token, f"{org.token}x"):
        answer = await api.call(org, "generate-uuid", {}, token=token)
        assert answer.status_code == 401, answer.text
        assert token not in answer.text and answer.json() == {"errorMessage": "not authenticated"}
    # A validation error never echoes the values it refuses.
    bad = await api.call(org, "create-draft", {"draftUuid": org.token, "html": org.token})
    assert bad.status_code == 400 and org.token not in bad.text

    # Platform tokens short-lived, so publishing refreshes them (restored afterwards).
    async with httpx.AsyncClient(timeout=10) as http:
        config = (await http.get(f"{sandbox_url(stack)}/_sandbox/config")).json()
        await http.put(f"{sandbox_url(stack)}/_sandbox/config", json={"accessTokenSeconds": 30})
        try:
            name = username()
            await connect_account(stack, org, "photoapp", name)
            story = {"storyPostUuid": str(uuid.uuid4()), "photoappUsername": name,
                     "html": IMAGE_STORY}  # fmt: skip
            # The webhook URL is signed; its delivery carries the signature, not the secret.
            path = f"/secrets/{uuid.uuid4().hex}"
            async with stack.channel("webhook", 10) as channel:
                await webhook_pb2_grpc.WebhookServiceStub(channel).AddWebhook(
                    wpb.AddWebhookRequest(
                        organization_id=org.organization_id,
                        url=receiver.url(path),
                        signing_secret=SIGNING_SECRET,
                    )
                )
            secrets["webhook signing secret"] = SIGNING_SECRET
            assert (await api.call(org, "schedule-photoapp-story", story)).status_code == 200
            ref = {"storyPostUuid": story["storyPostUuid"]}
            done = await wait_status(api, org, "status-photoapp-story", ref, {"executed", "failed"})
            assert done["status"] == "executed", done
            delivered = await receiver.wait_count(path, 2, timeout=30)
            assert all(d.header("x-service-signature") for d in delivered)
            assert all(SIGNING_SECRET.encode() not in d.body for d in delivered)
        finally:
            await http.put(f"{sandbox_url(stack)}/_sandbox/config", json=config)

        # A connect link: its page (the token is the URL's authorization) and a blob's URL.
        link = await api.call(org, "create-connect-link", {"connectLinkUuid": str(uuid.uuid4())})
        link_url = link.json()["connectLinkUrl"]
        secrets["connect link token"] = link_url.rsplit("/", 1)[1]
        assert (await http.get(link_url)).status_code == 200
        blob_url = await upload_blob(api, org, b"\x89PNG\r\n\x1a\n", "image/png")
        secrets["blob key"] = blob_url.rsplit("/", 1)[1]
        assert (await http.get(blob_url)).status_code == 302

    # An app user (made by the operator): password and session token (as the edge signs in).
    async with stack.channel("account", 10) as operator:
        email = f"{uuid.uuid4().hex[:8]}@example.com"
        await account_pb2_grpc.AccountServiceStub(operator).CreateUser(
            apb.CreateUserRequest(
                organization_id=org.organization_id, email=email, password=PASSWORD
            )
        )
    async with stack.channel("account", 10, caller=EDGE) as channel:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        secrets["user password"] = PASSWORD
        signed = await accounts.SignIn(
            apb.SignInRequest(
                organization_id=org.organization_id,
                email=email,
                password=PASSWORD,
                client_ip="127.0.0.1",
                user_agent="reliability",
            )
        )
        secrets["session token"] = signed.session_token
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await accounts.SignIn(
                apb.SignInRequest(
                    organization_id=org.organization_id,
                    email=email,
                    password=PASSWORD + "!",
                    client_ip="127.0.0.1",
                    user_agent="reliability",
                )
            )
        # A wrong password is refused without echoing it.
        assert PASSWORD not in str(refused.value.details())
    return secrets


async def stored_platform_secrets(db: Db) -> dict[str, str]:
    """Every platform token and connect-link token the stack holds, decrypted with the
    development key the test stack runs with."""
    cipher = TokenCipher([DEV_TOKEN_KEY])
    found: dict[str, str] = {}
    async for doc in db["connected_accounts"].find({}):
        for field in ("accessToken", "refreshToken"):
            plain = cipher.decrypt(str(doc.get(field) or ""))
            if plain:
                found[f"{field} of {doc['_id']}"] = plain
    async for doc in db["connect_links"].find({}):
        plain = cipher.decrypt(str(doc.get("tokenEncrypted") or ""))
        if plain:
            found[f"connect link {doc['_id']}"] = plain
    return found


def leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return sorted(name for name, value in secrets.items() if value and value in text)


async def test_no_secret_in_logs_metrics_errors_or_plain_in_the_database(
    rel_stack: StackHandle, rel_api: Api, rel_db: Db, receiver: LoopbackReceiver
) -> None:
    secrets = await walk_every_secret_path(rel_stack, rel_api, receiver)
    platform = await stored_platform_secrets(rel_db)
    assert any(name.startswith("refreshToken") for name in platform)
    everything = secrets | platform

    for component in rel_stack.processes.components:
        log = rel_stack.processes.logs(component, lines=10**7)
        assert log, component
        assert not leaks(log, everything), (component, leaks(log, everything))

    async with httpx.AsyncClient(timeout=10) as http:
        for component in METRICS:
            scraped = (await http.get(rel_stack.metrics_url(component))).text
            assert "# TYPE" in scraped, component
            assert not leaks(scraped, everything), (component, leaks(scraped, everything))

    # Plain in MongoDB: no collection holds any of them as written (hashes and ciphertexts
    # only). The S3 key is configuration, never data; the blob key is the stable URL's
    # secret part that render-svc must compare against, so it is stored as is (documented).
    stored_plain = {k: v for k, v in everything.items() if k != "blob key"}
    for name in await rel_db.list_collection_names():
        async for doc in rel_db[name].find({}):
            text = json.dumps(doc, default=str)
            assert not leaks(text, stored_plain), (name, doc.get("_id"), leaks(text, stored_plain))


def test_token_checks_are_timing_safe() -> None:
    """The code path, pinned: a bearer token is hashed (SHA-256) before anything compares
    or looks it up, and the one comparison of secrets is hmac.compare_digest. Timing can
    reveal nothing about the token: the lookup key is a hash the caller cannot steer."""
    import inspect

    from account_svc.identity.credentials import Credentials, hash_token
    from edge.auth import Authenticator

    authenticate = inspect.getsource(Credentials.authenticate)
    assert "hash_token(token)" in authenticate and "hmac.compare_digest" in authenticate
    assert re.search(r"find_one\(\s*\{\s*\"tokenHash\"", authenticate)
    lookup = inspect.getsource(Authenticator._lookup)
    assert "hashlib.sha256(token.encode()).hexdigest()" in lookup
    assert hash_token("sp_x") == hash_token("sp_x") != hash_token("sp_y")
