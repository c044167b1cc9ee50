"""The edge's connect link pages with a fake account-svc: every outcome is a clear HTML page
(never a stack trace), and the callback only finishes in the browser that started."""

from __future__ import annotations

import hashlib
from typing import Any

import falcon
import falcon.testing
import grpc
import pytest

from edge.config import EdgeSettings
from edge.routes.connect import STATE_COOKIE, ConnectCallback, ConnectLinkPage
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.errors import (
    DomainError,
    FailedPrecondition,
    NotFound,
    Unavailable,
)
from storypost_runtime.status import status_for
from tests.support.rpc import FakeRpcError

TOKEN = "T" * 43


def failing(error: DomainError | None = None) -> FakeRpcError:
    if error is None:

        class Internal:
            code, details, trailing_metadata = grpc.StatusCode.INTERNAL, "boom\nTraceback", ()

        return FakeRpcError(Internal())  # type: ignore[arg-type]
    return FakeRpcError(status_for(error))


class FakeAccounts:
    def __init__(self) -> None:
        self.view = pb.ConnectLinkView(
            organization_name="Sunny <Shop>",
            description="for the <b>store</b>",
            status=pb.CONNECT_LINK_STATUS_ACTIVE,
            platform="PHOTOAPP",
        )
        self.failure: FakeRpcError | None = None
        self.started: list[pb.StartConnectRequest] = []

    def _maybe_fail(self) -> None:
        if self.failure is not None:
            raise self.failure

    def GetConnectLink(self, request: pb.GetConnectLinkRequest, **_: Any) -> pb.ConnectLinkView:
        self._maybe_fail()
        return self.view

    def StartConnect(self, request: pb.StartConnectRequest, **_: Any) -> pb.StartConnectResponse:
        self._maybe_fail()
        self.started.append(request)
        return pb.StartConnectResponse(
            authorize_url="http://sandbox.test/photoapp/oauth/authorize?state=st4te",
            state="st4te",
        )

    def CompleteConnect(
        self, request: pb.CompleteConnectRequest, **_: Any
    ) -> pb.CompleteConnectResponse:
        self._maybe_fail()
        return pb.CompleteConnectResponse(
            account=pb.ConnectedAccount(username="alice"), organization_name="Sunny <Shop>"
        )


@pytest.fixture
def accounts() -> FakeAccounts:
    return FakeAccounts()


@pytest.fixture
def client(accounts: FakeAccounts) -> falcon.testing.TestClient:
    app = falcon.App()
    settings = EdgeSettings(public_url="https://edge.test")
    app.add_route("/connect/callback", ConnectCallback(accounts))  # type: ignore[arg-type]
    app.add_route("/connect/{token}", ConnectLinkPage(accounts, settings))  # type: ignore[arg-type]
    return falcon.testing.TestClient(app)


def test_the_page_escapes_what_it_shows_and_starts_with_a_post(
    client: falcon.testing.TestClient, accounts: FakeAccounts
) -> None:
    page = client.simulate_get(f"/connect/{TOKEN}")
    assert page.status_code == 200
    assert "Sunny &lt;Shop&gt;" in page.text and "<b>store</b>" not in page.text
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-frame-options"] == "DENY"
    assert accounts.started == []  # a GET starts nothing
    started = client.simulate_post(f"/connect/{TOKEN}")
    assert started.status_code == 303
    assert started.headers["location"].startswith("http://sandbox.test/photoapp/oauth/authorize")
    assert accounts.started[0].connect_link_token == TOKEN
    assert accounts.started[0].redirect_uri == "https://edge.test/connect/callback"
    cookie = started.cookies[STATE_COOKIE]
    assert cookie.http_only and cookie.secure and cookie.path == "/connect"
    done = client.simulate_get(
        "/connect/callback",
        params={"state": "st4te", "code": "c"},
        cookies={STATE_COOKIE: cookie.value},
    )
    assert done.status_code == 200 and "@alice" in done.text and "Sunny &lt;Shop&gt;" in done.text
    foreign = client.simulate_get(
        "/connect/callback", params={"state": "st4te", "code": "c"}, cookies={STATE_COOKIE: "x"}
    )
    assert foreign.status_code == 400


@pytest.mark.parametrize(
    ("error", "status", "heading"),
    [
        (NotFound("unknown connect link"), 404, "This connect link does not exist"),
        (
            FailedPrecondition("used", reason="CONNECT_LINK_USED"),
            410,
            "This connect link was already used",
        ),
        (Unavailable("down"), 503, "Please try again in a moment"),
        (None, 500, "Something went wrong"),
    ],
)
def test_failures_are_pages(
    client: falcon.testing.TestClient,
    accounts: FakeAccounts,
    error: DomainError | None,
    status: int,
    heading: str,
) -> None:
    accounts.failure = failing(error)
    for answer in (
        client.simulate_get(f"/connect/{TOKEN}"),
        client.simulate_post(f"/connect/{TOKEN}"),
    ):
        assert answer.status_code == status
        assert answer.headers["content-type"].startswith("text/html")
        assert heading in answer.text
        assert "Traceback" not in answer.text and "boom" not in answer.text


def test_used_and_malformed_links(
    client: falcon.testing.TestClient, accounts: FakeAccounts
) -> None:
    accounts.view.status = pb.CONNECT_LINK_STATUS_USED
    assert client.simulate_get(f"/connect/{TOKEN}").status_code == 410
    for bad in ("short", "x" * 44, "%3Cscript%3E" + "x" * 31):
        answer = client.simulate_get(f"/connect/{bad}")
        assert answer.status_code == 404 and "<script>" not in answer.text
    denied = FakeAccounts()
    denied.failure = failing(FailedPrecondition("the account owner did not allow access"))
    app = falcon.App()
    app.add_route("/connect/callback", ConnectCallback(denied))  # type: ignore[arg-type]
    answer = falcon.testing.TestClient(app).simulate_get(
        "/connect/callback",
        params={"state": "s", "error": "access_denied"},
        cookies={STATE_COOKIE: hashlib.sha256(b"s").hexdigest()},
    )
    assert answer.status_code == 400 and "did not allow access" in answer.text
