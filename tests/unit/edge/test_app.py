"""The edge's request pipeline with fake backends: ordering, error mapping, no stack traces."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import falcon.testing
import grpc
import pytest
from prometheus_client import CollectorRegistry

from edge.app import EdgeDependencies, create_app
from edge.auth import Authenticator, bearer_token
from edge.backends import Backends
from edge.catalog import build_catalog
from edge.config import EdgeSettings
from edge.procedures import HandlerMismatch, all_handlers, build_handlers, misc
from edge.procedures.base import CallContext, Handler, JsonObject
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from storypost_runtime.status import status_for
from tests.support.rpc import FakeRpcError

TOKEN = "sp_" + "a" * 43
ORG = "0123456789abcdef01234567"


def rpc_error(code: grpc.StatusCode, message: str = "down") -> FakeRpcError:
    class _S:
        pass

    status: Any = _S()
    status.code, status.details, status.trailing_metadata = code, message, ()
    return FakeRpcError(status)


class FakeAccounts:
    def __init__(self) -> None:
        self.auth_calls = 0
        self.down = False
        self.allowed = True

    def Authenticate(self, request: pb.AuthenticateRequest, **_: Any) -> pb.AuthenticateResponse:
        self.auth_calls += 1
        if self.down:
            raise rpc_error(grpc.StatusCode.UNAVAILABLE)
        if request.token != TOKEN:
            raise rpc_error(grpc.StatusCode.UNAUTHENTICATED, "not authenticated")
        return pb.AuthenticateResponse(organization_id=ORG, credential_id="c1")

    def ConsumeRateLimit(self, request: Any, **_: Any) -> pb.ConsumeRateLimitResponse:
        if self.down:
            raise rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED)
        return pb.ConsumeRateLimitResponse(
            allowed=self.allowed,
            limit=60,
            remaining=10 if self.allowed else 0,
            retry_after_seconds=0 if self.allowed else 3,
            reset_seconds=50,
        )


def failing(error: Exception) -> Any:
    def handler(_ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        raise error

    return handler


@pytest.fixture
def accounts(monkeypatch: pytest.MonkeyPatch) -> FakeAccounts:
    fake = FakeAccounts()
    monkeypatch.setattr("edge.backends.account_pb2_grpc.AccountServiceStub", lambda _channel: fake)
    return fake


def with_unused(names: Iterable[str], handlers: Mapping[str, Handler]) -> dict[str, Handler]:
    """The handlers a test gives (and generate-uuid's), and one that fails the test for every
    other procedure."""
    given = {**misc.handlers(), **handlers}

    def unused(_ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        raise AssertionError("this test calls no such procedure")

    return {name: given.get(name, unused) for name in names}


def client_of(settings: EdgeSettings, handlers: Mapping[str, Handler]) -> falcon.testing.TestClient:
    """The edge's app over fake backends (the `accounts` fixture's account-svc)."""
    catalog = build_catalog()
    backends = Backends.connect(EdgeSettings(account_addr="127.0.0.1:1"))
    deps = EdgeDependencies(
        backends=backends,
        authenticator=Authenticator(
            accounts=backends.account_stub, cache_seconds=settings.auth_cache_seconds
        ),
        catalog=catalog,
        handlers=with_unused(catalog.names(), handlers),
        registry=CollectorRegistry(),
        draining=threading.Event(),
    )
    return falcon.testing.TestClient(create_app(settings, deps))


def make_client(accounts: FakeAccounts, **handlers: Any) -> falcon.testing.TestClient:
    return client_of(EdgeSettings(auth_cache_seconds=60), handlers)


def post(
    client: falcon.testing.TestClient, procedure: str, body: Any = None, token: str = TOKEN
) -> Any:
    return client.simulate_post(
        f"/o/{ORG}/api/v1/{procedure}",
        json={} if body is None else body,
        headers={"Authorization": f"Bearer {token}"},
    )


def test_bearer_parsing() -> None:
    assert bearer_token(f"Bearer {TOKEN}") == TOKEN
    assert bearer_token(f"bearer   {TOKEN} ") == TOKEN
    for bad in [None, "", "Bearer", "Bearer a b", f"Token {TOKEN}", "Bearer \x00"]:
        assert bearer_token(bad) is None


def test_auth_answers_are_cached(accounts: FakeAccounts) -> None:
    client = make_client(accounts)
    for _ in range(3):
        assert post(client, "generate-uuid").status_code == 200
        assert post(client, "generate-uuid", token="sp_wrong").status_code == 401
    assert accounts.auth_calls == 2


class Called(Exception):
    """Raised by the recording channel in place of an answer."""


@component
class RecordingChannel:
    """A channel whose every call records its method and raises Called."""

    calls: list[str]

    def unary_unary(self, method: str, *_args: Any, **_kwargs: Any) -> Any:
        def call(_request: Any, **_options: Any) -> Any:
            self.calls.append(method.removeprefix("/"))
            raise Called

        return call


# Procedures the edge answers itself, without calling a service.
ANSWERED_BY_THE_EDGE = {"generate-uuid"}


def test_each_handler_calls_one_rpc_of_its_service() -> None:
    """A procedure is one call to one service (docs/architecture.md: a procedure's path): the
    RPC is named once, in its handler; here each handler's example input makes exactly one
    call, to the service its handler's module is wired to."""
    catalog = build_catalog()
    calls: list[str] = []
    channel: Any = RecordingChannel(calls)
    wired = all_handlers(
        catalog.names(), Backends(channel, channel, channel, channel), EdgeSettings()
    )
    ctx = CallContext("org", "cred", "req", "http://edge/o/org/api/v1", "http://edge/o/org")
    services = {
        "accounts": "AccountService",
        "media": "RenderService",
        "insights": "InsightsService",
    }
    for procedure in catalog:
        calls.clear()
        with contextlib.suppress(Called):
            wired[procedure.name](ctx, procedure.example_input)
        if procedure.name in ANSWERED_BY_THE_EDGE:
            assert calls == [], procedure.name
            continue
        assert len(calls) == 1, (procedure.name, calls)
        area = wired[procedure.name].__module__.rsplit(".", 1)[-1]
        service = services.get(area, "PublishService")
        assert f"{service}/" in calls[0], (procedure.name, calls)


def test_every_catalog_procedure_has_exactly_one_handler() -> None:
    catalog = build_catalog()
    settings = EdgeSettings(account_addr="127.0.0.1:1")
    wired = all_handlers(catalog.names(), Backends.connect(settings), settings)
    assert list(wired) == list(catalog.names())
    with pytest.raises(HandlerMismatch, match=r"no handler for \['status-draft'\]"):
        build_handlers(catalog.names(), {n: h for n, h in wired.items() if n != "status-draft"})
    with pytest.raises(HandlerMismatch, match=r"handlers of no procedure: \['status-drafts'\]"):
        build_handlers(catalog.names(), {**wired, "status-drafts": wired["status-draft"]})


@pytest.mark.parametrize(
    ("error", "status", "retry_after"),
    [
        (FakeRpcError(status_for(InvalidArgument("bad account"))), 400, None),
        (FakeRpcError(status_for(FailedPrecondition("already executed"))), 400, None),
        (FakeRpcError(status_for(ResourceExhausted("busy", retry_after_seconds=1.2))), 429, "2"),
        (rpc_error(grpc.StatusCode.NOT_FOUND, "no such post"), 400, None),
        (rpc_error(grpc.StatusCode.UNAVAILABLE), 503, "2"),
        (rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED), 503, "2"),
        (rpc_error(grpc.StatusCode.INTERNAL, "Traceback (most recent call last)"), 500, None),
        (rpc_error(grpc.StatusCode.UNKNOWN, "boom"), 500, None),
    ],
)
def test_grpc_status_to_http(
    accounts: FakeAccounts, error: Exception, status: int, retry_after: str | None
) -> None:
    client = make_client(accounts, **{"generate-uuid": failing(error)})
    result = post(client, "generate-uuid")
    assert result.status_code == status
    assert isinstance(result.json["errorMessage"], str) and result.json["errorMessage"]
    assert "Traceback" not in result.text
    assert result.headers.get("Retry-After") == retry_after
    # Rate-limit headers are on every authenticated answer.
    assert result.headers["RateLimit-Limit"] == "60"


def test_field_violations_from_a_service_become_the_validation_body(accounts: FakeAccounts) -> None:
    error = FakeRpcError(
        status_for(
            InvalidArgument("bad options", field_violations={"options.x": ["disallowed key"]})
        )
    )
    client = make_client(accounts, **{"generate-uuid": failing(error)})
    result = post(client, "generate-uuid")
    assert result.status_code == 400
    assert result.json["errorMessage"] == "invalid params for procedure: generate-uuid"
    assert result.json["validationErrorExplanation"] == {"options.x": ["disallowed key"]}


def test_unexpected_exception_is_a_plain_500(accounts: FakeAccounts) -> None:
    client = make_client(accounts, **{"generate-uuid": failing(KeyError("secret internals"))})
    result = post(client, "generate-uuid")
    assert result.status_code == 500
    assert result.json == {"errorMessage": "internal server error"}


def test_dependency_down_is_503(accounts: FakeAccounts) -> None:
    accounts.down = True
    result = post(make_client(accounts), "generate-uuid")
    assert result.status_code == 503
    assert result.json["errorMessage"]


def test_rate_limited_is_429_before_validation(accounts: FakeAccounts) -> None:
    accounts.allowed = False
    result = post(make_client(accounts), "generate-uuid", {"unknown": 1})
    assert result.status_code == 429
    assert result.headers["Retry-After"] == "3"
    assert result.headers["RateLimit-Remaining"] == "0"


def test_body_too_large_is_413(accounts: FakeAccounts) -> None:
    client = client_of(EdgeSettings(max_body_bytes=1024), {})
    result = client.simulate_post(
        f"/o/{ORG}/api/v1/generate-uuid",
        body=b"{" + b" " * 2000 + b"}",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert result.status_code == 413
    assert "too large" in result.json["errorMessage"]
