"""Signed callers: a real gRPC server with account-svc's restrictions, called with every kind
of credential a caller can bring (none, a stranger's key, a forged name, the wrong audience,
an expired or over-long token, a caller the procedure does not answer, the right one)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import jwt
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry

from account_svc.callers import RESTRICTIONS
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.service_auth import (
    ADMIN,
    CALLERS,
    EDGE,
    PUBLISH_SVC,
    RENDER_SVC,
    CallerRefused,
    CallerVerifier,
    CredentialError,
    ServiceCredential,
    TokenSigner,
    caller_signer,
    parse_public_keys,
    public_keys_setting,
)
from tests.support.account_server import SERVICE, account_server

CREDENTIALS = {name: ServiceCredential.generate(name) for name in CALLERS}


class Answering(account_pb2_grpc.AccountServiceServicer):
    """Answers what the checks let through."""

    async def GetAccessToken(self, request: Any, context: Any) -> Any:
        return pb.AccessToken(access_token="platform-token")

    async def GetOrganization(self, request: Any, context: Any) -> Any:
        return pb.Organization(organization_id=request.organization_id)


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, CollectorRegistry]]:
    registry = CollectorRegistry()
    srv = account_server(
        Answering(),  # type: ignore[abstract]
        registry,
        restrictions=RESTRICTIONS,
        service_public_keys=public_keys_setting(CREDENTIALS),
    )
    port = await srv.start()
    yield f"127.0.0.1:{port}", registry
    await srv.stop()


async def token_call(
    address: str, caller: ServiceCredential | None, token: str | None = None
) -> pb.AccessToken:
    signer = TokenSigner(credential=caller) if caller else None
    async with aio_channel(address, 5.0, signer) as channel:
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        return await account_pb2_grpc.AccountServiceStub(channel).GetAccessToken(
            pb.GetAccessTokenRequest(organization_id="o"), metadata=metadata
        )


async def refused(
    address: str, caller: ServiceCredential | None, token: str | None = None
) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await token_call(address, caller, token)
    code: grpc.StatusCode = error.value.code()
    return code


async def test_only_publish_svc_gets_platform_tokens(server: Any) -> None:
    address, registry = server
    answer = await token_call(address, CREDENTIALS[PUBLISH_SVC])
    assert answer.access_token == "platform-token"
    for other in (EDGE, RENDER_SVC, ADMIN):
        assert await refused(address, CREDENTIALS[other]) == grpc.StatusCode.PERMISSION_DENIED
    # Refusals are counted like every other answer.
    denied = registry.get_sample_value(
        "storypost_grpc_requests_total",
        {"method": f"/{SERVICE}/GetAccessToken", "code": "PERMISSION_DENIED"},
    )
    assert denied == 3


async def test_calls_without_a_valid_token_are_refused(server: Any) -> None:
    address, _ = server
    unauthenticated = grpc.StatusCode.UNAUTHENTICATED
    assert await refused(address, None) == unauthenticated
    # A key nobody registered, under a registered name.
    assert await refused(address, ServiceCredential.generate(PUBLISH_SVC)) == unauthenticated
    # A registered caller's key, claiming another caller's name.
    forged = ServiceCredential(PUBLISH_SVC, CREDENTIALS[RENDER_SVC].key)
    assert await refused(address, forged) == unauthenticated
    # A token for another service, an expired one, one that lives too long, garbage.
    publish = CREDENTIALS[PUBLISH_SVC]
    other_service = TokenSigner(credential=publish).token("storypost.render.v1.RenderService")
    assert await refused(address, None, other_service) == unauthenticated
    now = time.time()
    expired = TokenSigner(credential=publish, clock=lambda: now - 3600).token(SERVICE)
    assert await refused(address, None, expired) == unauthenticated
    forever = jwt.encode(
        {"iss": PUBLISH_SVC, "aud": SERVICE, "iat": int(now), "exp": int(now) + 86400},
        publish.key,
        algorithm="EdDSA",
        headers={"kid": PUBLISH_SVC},
    )
    assert await refused(address, None, forever) == unauthenticated
    assert await refused(address, None, "not-a-token") == unauthenticated
    # An unsigned token ("alg": "none") is no token.
    unsigned = jwt.encode(
        {"iss": PUBLISH_SVC, "aud": SERVICE, "iat": int(now), "exp": int(now) + 60},
        "",
        algorithm="none",
        headers={"kid": PUBLISH_SVC},
    )
    assert await refused(address, None, unsigned) == unauthenticated


async def test_unrestricted_procedures_answer_any_signed_caller_and_health_answers_all(
    server: Any,
) -> None:
    address, _ = server
    async with aio_channel(
        address, 5.0, TokenSigner(credential=CREDENTIALS[RENDER_SVC])
    ) as channel:
        org = await account_pb2_grpc.AccountServiceStub(channel).GetOrganization(
            pb.GetOrganizationRequest(organization_id="o-1")
        )
        assert org.organization_id == "o-1"
    async with aio_channel(address, 5.0) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await account_pb2_grpc.AccountServiceStub(channel).GetOrganization(
                pb.GetOrganizationRequest(organization_id="o-1")
            )
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # The kubelet's probe carries no token.
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_a_signer_reuses_its_token_until_a_third_of_its_life_is_left() -> None:
    now = [1_000_000.0]
    signer = TokenSigner(credential=CREDENTIALS[EDGE], lifetime=300, clock=lambda: now[0])
    first = signer.token(SERVICE)
    now[0] += 150
    assert signer.token(SERVICE) == first
    now[0] += 60
    assert signer.token(SERVICE) != first
    assert signer.token("another.Service") != signer.token(SERVICE)


def test_credentials_round_trip_and_bad_ones_name_the_setting() -> None:
    credential = CREDENTIALS[EDGE]
    again = ServiceCredential.parse(credential.secret())
    assert again.public_entry() == credential.public_entry()
    assert set(parse_public_keys(public_keys_setting(CREDENTIALS))) == set(CREDENTIALS)
    assert caller_signer("") is None
    for bad in ("edge", "edge:", ":abc", "edge:not base64!", "edge:" + "A" * 10):
        with pytest.raises(CredentialError, match="STORYPOST_SERVICE_KEY"):
            ServiceCredential.parse(bad)
    twice = f"{credential.public_entry()},{credential.public_entry()}"
    with pytest.raises(CredentialError, match="listed twice"):
        parse_public_keys(twice)


def test_a_caller_rotating_its_key_is_answered_with_either_key_while_both_are_listed() -> None:
    old, new = ServiceCredential.generate(EDGE), ServiceCredential.generate(EDGE)
    both = CallerVerifier(parse_public_keys(f"{old.public_entry()},{new.public_entry()}"))
    only_new = CallerVerifier(parse_public_keys(new.public_entry()))
    for credential in (old, new):
        assert (
            both.caller(f"Bearer {TokenSigner(credential=credential).token(SERVICE)}", SERVICE)
            == EDGE
        )
    assert only_new.caller(f"Bearer {TokenSigner(credential=new).token(SERVICE)}", SERVICE) == EDGE
    with pytest.raises(CallerRefused):
        only_new.caller(f"Bearer {TokenSigner(credential=old).token(SERVICE)}", SERVICE)
    # The secret never shows in a repr.
    assert credential.secret().partition(":")[2] not in repr(credential)


def test_a_verified_token_is_answered_again_until_it_expires_and_only_for_its_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [time.time()]
    verifier = CallerVerifier(parse_public_keys(CREDENTIALS[EDGE].public_entry()), lambda: now[0])
    token = TokenSigner(credential=CREDENTIALS[EDGE], clock=lambda: now[0]).token(SERVICE)
    decoded = 0
    real_decode = jwt.decode

    def counting_decode(*args: Any, **kwargs: Any) -> Any:
        nonlocal decoded
        decoded += 1
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counting_decode)
    for _ in range(5):
        assert verifier.caller(f"Bearer {token}", SERVICE) == EDGE
    assert decoded == 1
    # The same token for another service is checked (and refused) as before.
    with pytest.raises(CallerRefused):
        verifier.caller(f"Bearer {token}", "storypost.render.v1.RenderService")
    # One changed character is another token: checked, refused.
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    with pytest.raises(CallerRefused):
        verifier.caller(f"Bearer {tampered}", SERVICE)
    # Past its expiry and the leeway, the remembered token is refused like any expired one.
    now[0] += 300 + 31
    with pytest.raises(CallerRefused):
        verifier.caller(f"Bearer {token}", SERVICE)


def test_storypost_keys_service_prints_matching_credentials_and_public_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from storypost_cli.__main__ import main

    main(["keys", "service", EDGE, "reporting-team"])
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert set(lines) == {"edge-service-key", "reporting-team-service-key", "service-public-keys"}
    public = parse_public_keys(lines["service-public-keys"])
    verifier = CallerVerifier(public)
    for name in (EDGE, "reporting-team"):
        signer = caller_signer(lines[f"{name}-service-key"])
        assert signer is not None and signer.caller == name
        assert verifier.caller(f"Bearer {signer.token(SERVICE)}", SERVICE) == name
