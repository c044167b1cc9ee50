"""The app pages with fake backends: sign-in redirects and comes back, cookies, CSRF on every
form, no open redirect, clear pages for failed calls, security headers."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import urlencode

import falcon
import falcon.testing
import pytest

from edge.config import EdgeSettings
from edge.web import mount
from edge.web.base import Web
from edge.web.draft_posts import story_uuid
from edge.web.failures import page_error
from edge.web.session import Sessions, csrf_for, safe_next
from edge.web.static_files import StaticFiles
from edge.web.views import Views
from storypost.account.v1 import account_pb2 as pb
from storypost.publish.v1 import publish_pb2
from storypost.render.v1 import render_pb2
from storypost.webhook.v1 import webhook_pb2
from storypost_runtime.component import component
from storypost_runtime.errors import (
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from tests.support.rpc import rpc_error

ORG = "0123456789abcdef01234567"
TOKEN = "T" * 43
EMAIL = "ana@example.com"
PASSWORD = "correct horse battery"


@dataclass
class FakeAccounts:
    sessions: set[str] = field(default_factory=lambda: {TOKEN})
    signin_error: DomainError | None = None
    down: bool = False
    calls: list[str] = field(default_factory=list)
    role: pb.UserRole.ValueType = pb.USER_ROLE_ADMIN
    time_zone: str = "UTC"
    credits: int = 7

    def GetOrganization(self, request: pb.GetOrganizationRequest, **_: Any) -> pb.Organization:
        if request.organization_id != ORG:
            raise rpc_error(NotFound("no org"))
        return pb.Organization(organization_id=ORG, name="Sunny <Shop>")

    def GetSession(self, request: pb.GetSessionRequest, **_: Any) -> pb.AppSession:
        if self.down:
            raise rpc_error(Unavailable("mongo down"))
        if request.session_token not in self.sessions or request.organization_id != ORG:
            raise rpc_error(Unauthenticated("not signed in"))
        return pb.AppSession(
            session_id="s1",
            organization_id=ORG,
            user_id="u1",
            email=EMAIL,
            role=self.role,
            time_zone=self.time_zone,
        )

    def SignIn(self, request: pb.SignInRequest, **_: Any) -> pb.SignInResponse:
        self.calls.append(f"SignIn {request.email} {request.client_ip}")
        if self.signin_error is not None:
            raise rpc_error(self.signin_error)
        if request.email != EMAIL or request.password != PASSWORD:
            raise rpc_error(Unauthenticated("wrong email or password"))
        return pb.SignInResponse(session_token=TOKEN, session=pb.AppSession(email=EMAIL))

    def EndSession(self, request: pb.EndSessionRequest, **_: Any) -> pb.EndSessionResponse:
        self.calls.append("EndSession")
        ended = request.session_token in self.sessions
        self.sessions.discard(request.session_token)
        return pb.EndSessionResponse(ended=ended)

    def ListApiCredentials(self, request: Any, **_: Any) -> pb.ListApiCredentialsResponse:
        return pb.ListApiCredentialsResponse()

    def CreateApiCredential(
        self, request: pb.CreateApiCredentialRequest, **_: Any
    ) -> pb.CreateApiCredentialResponse:
        self.calls.append(f"CreateApiCredential {request.name}")
        return pb.CreateApiCredentialResponse(
            credential=pb.ApiCredential(credential_id="c1", name=request.name),
            token="sp_" + "x" * 43,
        )

    def ListConnectedAccounts(self, request: Any, **_: Any) -> pb.ListConnectedAccountsResponse:
        account = pb.ConnectedAccount(social_account_id="sa_1", username="sunny.pages")
        return pb.ListConnectedAccountsResponse(accounts=[account])

    def GetCredits(self, request: pb.GetCreditsRequest, **_: Any) -> pb.CreditBalance:
        return pb.CreditBalance(organization_id=ORG, balance=self.credits)

    def ListUsers(self, request: pb.ListUsersRequest, **_: Any) -> pb.ListUsersResponse:
        assert request.session_token == TOKEN
        return pb.ListUsersResponse(
            users=[
                pb.User(user_id="u1", email=EMAIL, role=pb.USER_ROLE_ADMIN),
                pb.User(user_id="u2", email="bob@example.com", role=pb.USER_ROLE_MEMBER),
            ]
        )

    def _as_admin(self, request: Any, what: str) -> None:
        self.calls.append(what)
        assert request.session_token == TOKEN
        if self.role != pb.USER_ROLE_ADMIN:  # what account-svc answers
            raise rpc_error(PermissionDenied("only admins", reason="NOT_WORKSPACE_ADMIN"))

    def AddUser(self, request: pb.AddUserRequest, **_: Any) -> pb.User:
        self._as_admin(request, f"AddUser {request.email} {pb.UserRole.Name(request.role)}")
        return pb.User(user_id="u3", email=request.email, role=request.role)

    def RemoveUser(self, request: pb.RemoveUserRequest, **_: Any) -> pb.User:
        self._as_admin(request, f"RemoveUser {request.user_id}")
        return pb.User(user_id=request.user_id, email="bob@example.com")

    def SetUserPassword(self, request: pb.SetUserPasswordRequest, **_: Any) -> pb.User:
        self._as_admin(request, f"SetUserPassword {request.user_id} {request.password}")
        return pb.User(user_id=request.user_id, email="bob@example.com")

    def SetTimeZone(self, request: pb.SetTimeZoneRequest, **_: Any) -> pb.AppSession:
        self.calls.append(f"SetTimeZone {request.time_zone}")
        if request.time_zone == "Mars/Olympus":
            raise rpc_error(InvalidArgument("unknown time zone 'Mars/Olympus'"))
        self.time_zone = request.time_zone
        return pb.AppSession(time_zone=request.time_zone)


@dataclass
class FakeRender:
    draft_error: DomainError | None = None
    drafts: list[render_pb2.Draft] = field(default_factory=list)

    def GetDraft(self, request: Any, **_: Any) -> render_pb2.Draft:
        if self.draft_error is not None:
            raise rpc_error(self.draft_error)
        return render_pb2.Draft(draft_uuid=request.draft_uuid, name="x")

    def ListDraftFolders(self, request: Any, **_: Any) -> render_pb2.ListDraftFoldersResponse:
        return render_pb2.ListDraftFoldersResponse(folder_names=["Launches"])

    @property
    def ListDrafts(self) -> Any:
        def list_drafts(request: Any, **_: Any) -> render_pb2.ListDraftsResponse:
            if request.folder_name == "Launches":
                return render_pb2.ListDraftsResponse(drafts=self.drafts)
            return render_pb2.ListDraftsResponse()

        return Unary(list_drafts)


@component
class Unary:
    """A fake stub method that also answers `.future(...)` like grpc's."""

    call: Any

    def __call__(self, request: Any, **kw: Any) -> Any:
        return self.call(request, **kw)

    def future(self, request: Any, **kw: Any) -> Any:
        answer = self.call(request, **kw)
        return type("Done", (), {"result": lambda _self: answer})()


def _in_range(post: publish_pb2.Post, request: publish_pb2.ListPostsRequest) -> bool:
    when = (post.date if post.HasField("date") else post.created_at).ToDatetime(tzinfo=UTC)
    after = not request.HasField("date_from") or when >= request.date_from.ToDatetime(tzinfo=UTC)
    return after and (
        not request.HasField("date_to") or when < request.date_to.ToDatetime(tzinfo=UTC)
    )


@dataclass
class FakePublish:
    posts: list[publish_pb2.Post] = field(default_factory=list)
    limits: list[int] = field(default_factory=list)
    listed: list[publish_pb2.ListPostsRequest] = field(default_factory=list)

    def ListPosts(self, request: publish_pb2.ListPostsRequest, **_: Any) -> Any:
        """`posts` are newest first; tokens are "older:<index>" and "newer:<index>"."""
        self.limits.append(request.limit)
        self.listed.append(request)
        posts = [p for p in self.posts if _in_range(p, request)]
        direction, _colon, at = request.page_token.partition(":")
        if request.page_token and (direction not in ("older", "newer") or not at.isdigit()):
            raise rpc_error(InvalidArgument("page_token is not a token of this listing"))
        index = int(at or 0)
        start = max(0, index - request.limit) if direction == "newer" else index
        end = start + request.limit
        return publish_pb2.ListPostsResponse(
            posts=posts[start:end],
            next_page_token=f"older:{end}" if end < len(posts) else "",
            previous_page_token=f"newer:{start}" if start > 0 else "",
        )

    def CancelStory(self, request: publish_pb2.GetPostRequest, **_: Any) -> publish_pb2.Post:
        self.limits.append(-1)
        return publish_pb2.Post(post_uuid=request.post_uuid)

    def _unknown(self, request: Any, **_: Any) -> publish_pb2.Post:
        raise rpc_error(NotFound("no such post"))

    GetReel = GetClipappPost = GetSocialPost = _unknown
    CancelReel = CancelClipappPost = CancelSocialPost = _unknown

    @property
    def GetStory(self) -> Any:
        def get(request: publish_pb2.GetPostRequest, **_: Any) -> publish_pb2.Post:
            for post in self.posts:
                if post.post_uuid == request.post_uuid:
                    return post
            raise rpc_error(NotFound("no such story"))

        return Unary(get)


@dataclass
class FakeWebhooks:
    add_error: DomainError | None = None

    def ListWebhooks(self, request: Any, **_: Any) -> webhook_pb2.ListWebhooksResponse:
        return webhook_pb2.ListWebhooksResponse()

    def ListDeliveries(self, request: Any, **_: Any) -> webhook_pb2.ListDeliveriesResponse:
        return webhook_pb2.ListDeliveriesResponse()

    def AddWebhook(self, request: Any, **_: Any) -> webhook_pb2.Webhook:
        if self.add_error is not None:
            raise rpc_error(self.add_error)
        return webhook_pb2.Webhook(url=request.url)


@dataclass
class World:
    client: falcon.testing.TestClient
    accounts: FakeAccounts
    render: FakeRender
    webhooks: FakeWebhooks
    publish: FakePublish


def app_client(
    accounts: FakeAccounts,
    *,
    render: FakeRender,
    publish: FakePublish,
    webhooks: FakeWebhooks,
    insights: Any = None,
) -> falcon.testing.TestClient:
    """The app's pages (as the edge mounts them) over the fake backends."""
    settings = EdgeSettings(public_url="http://app.example")
    static = StaticFiles()
    web = Web(
        settings=settings,
        views=Views(static.url),
        sessions=Sessions(cast(Any, accounts), settings),
        accounts=cast(Any, accounts),
        render=cast(Any, render),
        publish=cast(Any, publish),
        webhooks=cast(Any, webhooks),
        insights=insights,
    )
    app = falcon.App()
    app.req_options.strip_url_path_trailing_slash = True
    mount(app, web, static)
    return falcon.testing.TestClient(app)


@pytest.fixture
def world() -> World:
    accounts, render, webhooks = FakeAccounts(), FakeRender(), FakeWebhooks()
    publish = FakePublish()
    client = app_client(accounts, render=render, publish=publish, webhooks=webhooks)
    return World(client, accounts, render, webhooks, publish)


def session_cookie(token: str = TOKEN) -> dict[str, str]:
    return {"Cookie": f"storypost_session={token}"}


def form_post(
    world: World, path: str, data: dict[str, str], cookie: str = ""
) -> falcon.testing.Result:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if cookie:
        headers["Cookie"] = cookie
    return world.client.simulate_post(path, body=urlencode(data), headers=headers)


def test_pages_without_a_session_redirect_to_sign_in_and_back(world: World) -> None:
    path = f"/o/{ORG}/drafts/6f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e61"
    answer = world.client.simulate_get(path, query_string="x=1")
    assert answer.status_code == 303
    assert answer.headers["location"] == (
        f"/o/{ORG}/signin?next=%2Fo%2F{ORG}%2Fdrafts%2F6f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e61%3Fx%3D1"
    )
    # An unknown or ended session is the same as none.
    answer = world.client.simulate_get(path, headers=session_cookie("U" * 43))
    assert answer.status_code == 303


def sign_in_form(world: World, next_page: str) -> tuple[str, str]:
    """GETs the sign-in page; returns (csrf, cookie header)."""
    page = world.client.simulate_get(f"/o/{ORG}/signin", query_string=f"next={next_page}")
    assert page.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    cookie = page.cookies["storypost_signin"]
    assert cookie.http_only and cookie.path == f"/o/{ORG}"
    assert f'name="next" value="{next_page or f"/o/{ORG}/gallery"}"' in page.text
    # The workspace's name is escaped, like every value on every page.
    assert "Sunny &lt;Shop&gt;" in page.text
    return csrf.group(1), f"storypost_signin={cookie.value}"


def test_sign_in_sets_the_session_cookie_and_goes_to_next(world: World) -> None:
    csrf, cookie = sign_in_form(world, f"/o/{ORG}/posts")
    wrong = form_post(
        world,
        f"/o/{ORG}/signin",
        {"csrf": csrf, "email": EMAIL, "password": "nope", "next": f"/o/{ORG}/posts"},
        cookie,
    )
    assert wrong.status_code == 401
    assert "Wrong email or password." in wrong.text
    # The failed form still goes back to the page asked for.
    assert f'name="next" value="/o/{ORG}/posts"' in wrong.text
    done = form_post(
        world,
        f"/o/{ORG}/signin",
        {"csrf": csrf, "email": EMAIL, "password": PASSWORD, "next": f"/o/{ORG}/posts"},
        cookie,
    )
    assert done.status_code == 303
    assert done.headers["location"] == f"/o/{ORG}/posts"
    session = done.cookies["storypost_session"]
    assert session.value == TOKEN
    assert session.http_only and session.same_site == "Lax" and not session.secure
    assert session.path == f"/o/{ORG}" and session.max_age is None
    assert world.accounts.calls[-1] == f"SignIn {EMAIL} 127.0.0.1"


def test_sign_in_needs_its_csrf_cookie(world: World) -> None:
    csrf, _ = sign_in_form(world, "")
    answer = form_post(
        world, f"/o/{ORG}/signin", {"csrf": csrf, "email": EMAIL, "password": PASSWORD}
    )
    assert answer.status_code == 403
    assert "This form has expired" in answer.text
    assert not any(call.startswith("SignIn") for call in world.accounts.calls)


def test_sign_in_rate_limit_is_a_429_page_with_retry_after(world: World) -> None:
    world.accounts.signin_error = ResourceExhausted(
        "too many sign-in attempts; try again in 2 minutes", retry_after_seconds=90
    )
    csrf, cookie = sign_in_form(world, "")
    answer = form_post(
        world, f"/o/{ORG}/signin", {"csrf": csrf, "email": EMAIL, "password": "x"}, cookie
    )
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "90"
    assert "Too many sign-in attempts; try again in 2 minutes." in answer.text


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/o/other/gallery",
        f"/o/{ORG}x/gallery",
        f"/o/{ORG}/signin",
        f"/o/{ORG}/api/v1/generate-uuid",
        "/\\evil.example",
        "",
    ],
)
def test_next_never_leaves_the_workspace(target: str) -> None:
    assert safe_next(ORG, target) == f"/o/{ORG}/gallery"


def test_next_keeps_pages_of_the_workspace() -> None:
    assert safe_next(ORG, f"/o/{ORG}/drafts/abc?x=1") == f"/o/{ORG}/drafts/abc?x=1"


def test_every_form_checks_the_csrf_token(world: World) -> None:
    cookie = f"storypost_session={TOKEN}"
    for path, data in (
        (f"/o/{ORG}/settings/credentials", {"action": "create", "name": "x"}),
        (f"/o/{ORG}/settings/webhooks", {"action": "add", "url": "https://a.example"}),
        (f"/o/{ORG}/accounts", {"action": "create-link", "description": ""}),
        (f"/o/{ORG}/posts", {"action": "cancel", "kind": "story", "post_uuid": "p"}),
        (f"/o/{ORG}/drafts/d1", {"action": "delete"}),
        (f"/o/{ORG}/settings/users", {"action": "remove", "user_id": "u2"}),
        (f"/o/{ORG}/settings/users", {"action": "add", "email": "e@x.example", "role": "admin"}),
        (f"/o/{ORG}/settings/users", {"action": "password", "user_id": "u2", "password": "p"}),
        (f"/o/{ORG}/settings/profile", {"action": "time-zone", "time_zone": "Asia/Tokyo"}),
        (f"/o/{ORG}/signout", {}),
    ):
        for csrf in ("", "wrong", csrf_for("another session token............")):
            answer = form_post(world, path, {**data, "csrf": csrf}, cookie)
            assert answer.status_code == 403, path
            assert "This form has expired" in answer.text
    assert world.accounts.calls == []
    assert TOKEN in world.accounts.sessions


def test_a_good_token_creates_the_credential_and_shows_it_once(world: World) -> None:
    answer = form_post(
        world,
        f"/o/{ORG}/settings/credentials",
        {"action": "create", "name": "ci", "csrf": csrf_for(TOKEN)},
        f"storypost_session={TOKEN}",
    )
    assert answer.status_code == 201
    assert "sp_" + "x" * 43 in answer.text
    assert answer.headers["cache-control"] == "no-store"
    assert world.accounts.calls == ["CreateApiCredential ci"]


def test_sign_out_ends_the_session_on_the_server(world: World) -> None:
    answer = form_post(
        world, f"/o/{ORG}/signout", {"csrf": csrf_for(TOKEN)}, f"storypost_session={TOKEN}"
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/o/{ORG}/signin"
    assert world.accounts.calls == ["EndSession"]
    assert TOKEN not in world.accounts.sessions
    cleared = answer.cookies["storypost_session"]
    assert cleared.value == "" and cleared.path == f"/o/{ORG}"


def test_pages_carry_security_headers(world: World) -> None:
    answer = world.client.simulate_get(f"/o/{ORG}/settings/webhooks", headers=session_cookie())
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-frame-options"] == "DENY"
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert 'aria-current="page">Webhooks' in answer.text


def test_failed_calls_become_clear_pages(world: World) -> None:
    world.render.draft_error = NotFound("gone")
    answer = world.client.simulate_get(f"/o/{ORG}/drafts/d1", headers=session_cookie())
    assert answer.status_code == 404
    assert "This draft was not found." in answer.text
    world.accounts.down = True
    answer = world.client.simulate_get(f"/o/{ORG}/gallery", headers=session_cookie())
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert "A service is briefly unavailable" in answer.text
    assert "Traceback" not in answer.text


def test_a_refused_webhook_shows_the_reason_and_keeps_the_form(world: World) -> None:
    world.webhooks.add_error = InvalidArgument("url must use https:// (plain http is refused)")
    answer = form_post(
        world,
        f"/o/{ORG}/settings/webhooks",
        {
            "action": "add",
            "url": "http://example.com/h",
            "events": "social_post.status_changed",
            "csrf": csrf_for(TOKEN),
        },
        f"storypost_session={TOKEN}",
    )
    assert answer.status_code == 400
    assert "Url must use https:// (plain http is refused)." in answer.text
    assert 'value="http://example.com/h"' in answer.text
    checked = re.findall(r'value="([a-z_.]+)" checked', answer.text)
    assert checked == ["social_post.status_changed"]
    world.webhooks.add_error = FailedPrecondition(
        "an organization can have at most 5 webhook URLs; remove one first", reason="WEBHOOK_LIMIT"
    )
    answer = form_post(
        world,
        f"/o/{ORG}/settings/webhooks",
        {
            "action": "add",
            "url": "https://example.com/h",
            "events": "social_post.status_changed",
            "csrf": csrf_for(TOKEN),
        },
        f"storypost_session={TOKEN}",
    )
    assert "at most 5 webhook URLs" in answer.text


def test_static_files_are_versioned(world: World) -> None:
    page = world.client.simulate_get(f"/o/{ORG}/settings/webhooks", headers=session_cookie())
    found = re.search(r'href="(/static/app\.css\?v=([0-9a-f]+))"', page.text)
    assert found is not None
    css = world.client.simulate_get("/static/app.css", query_string=f"v={found.group(2)}")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "immutable" in css.headers["cache-control"]
    again = world.client.simulate_get(
        "/static/app.css", headers={"If-None-Match": css.headers["etag"]}
    )
    assert again.status_code == 304
    assert world.client.simulate_get("/static/../app.py").status_code == 404


def admin_post(world: World, path: str, data: dict[str, str]) -> falcon.testing.Result:
    return form_post(world, path, {**data, "csrf": csrf_for(TOKEN)}, f"storypost_session={TOKEN}")


def test_an_admin_manages_users_from_the_app(world: World) -> None:
    page = world.client.simulate_get(f"/o/{ORG}/settings/users", headers=session_cookie())
    assert page.status_code == 200
    assert "bob@example.com" in page.text and "Add user" in page.text
    assert 'aria-label="Remove bob@example.com"' in page.text
    assert 'aria-label="Remove ana@example.com"' not in page.text  # never yourself
    path = f"/o/{ORG}/settings/users"
    answer = admin_post(
        world,
        path,
        {"action": "add", "email": "<eve>@example.com", "password": "p" * 12, "role": "member"},
    )
    assert answer.status_code == 303 and answer.headers["location"] == path
    assert admin_post(world, path, {"action": "remove", "user_id": "u2"}).status_code == 303
    new_password = {"action": "password", "user_id": "u2", "password": "q" * 12}
    assert admin_post(world, path, new_password).status_code == 303
    assert world.accounts.calls == [
        "AddUser <eve>@example.com USER_ROLE_MEMBER",
        "RemoveUser u2",
        f"SetUserPassword u2 {'q' * 12}",
    ]
    # The one-time message escapes the address like every value.
    shown = world.client.simulate_get(
        path, headers={"Cookie": f"storypost_session={TOKEN}; {answer.headers['set-cookie']}"}
    )
    assert "<eve>" not in shown.text


def test_a_member_gets_a_clear_refusal(world: World) -> None:
    world.accounts.role = pb.USER_ROLE_MEMBER
    page = world.client.simulate_get(f"/o/{ORG}/settings/users", headers=session_cookie())
    assert page.status_code == 200
    assert "Only a workspace admin can add or remove users" in page.text
    assert "Add user" not in page.text and "Set password" not in page.text
    for data in (
        {"action": "add", "email": "eve@example.com", "password": "p" * 12, "role": "admin"},
        {"action": "remove", "user_id": "u1"},
        {"action": "password", "user_id": "u1", "password": "p" * 12},
    ):
        answer = admin_post(world, f"/o/{ORG}/settings/users", data)
        assert answer.status_code == 403
        assert "Admins only" in answer.text
        assert "Only a workspace admin can add or remove users" in answer.text
    assert world.accounts.calls == []


def test_account_svc_refusing_a_member_is_the_same_clear_page() -> None:
    # account-svc checks the acting session's role too; its refusal reads the same.
    failure = rpc_error(
        PermissionDenied("only a workspace admin can", reason="NOT_WORKSPACE_ADMIN")
    )
    mapped = page_error(failure)
    assert (mapped.status, mapped.title) == (403, "Admins only")
    assert mapped.message == "Only a workspace admin can."


def test_the_time_zone_is_chosen_and_every_date_follows_it(world: World) -> None:
    page = world.client.simulate_get(f"/o/{ORG}/settings/profile", headers=session_cookie())
    assert '<option value="Europe/Paris">Europe/Paris</option>' in page.text
    assert '<option value="UTC" selected>' in page.text
    answer = admin_post(
        world, f"/o/{ORG}/settings/profile", {"action": "time-zone", "time_zone": "Europe/Paris"}
    )
    assert answer.status_code == 303
    assert world.accounts.calls == ["SetTimeZone Europe/Paris"]
    refused = admin_post(
        world, f"/o/{ORG}/settings/profile", {"action": "time-zone", "time_zone": "Mars/Olympus"}
    )
    assert refused.status_code == 303  # back to the form with the message
    # 23:30 UTC on Monday 23 Nov 2026 is Tuesday 00:30 in Paris.
    world.publish.posts = [story("p1", datetime(2026, 11, 23, 23, 30, tzinfo=UTC))]
    posts = world.client.simulate_get(f"/o/{ORG}/posts", headers=session_cookie())
    assert "24 Nov 2026, 00:30 CET" in posts.text
    week = world.client.simulate_get(
        f"/o/{ORG}/calendar", query_string="date=2026-11-25", headers=session_cookie()
    )
    assert week.status_code == 200
    tuesday = week.text.split('data-day="2026-11-24"')[1].split('data-day="2026-11-25"')[0]
    assert 'data-post="p1"' in tuesday and "00:30" in tuesday
    assert 'data-post="p1"' not in week.text.split('data-day="2026-11-24"')[0]


def story(
    post_uuid: str,
    when: datetime,
    status: publish_pb2.PostStatus.ValueType = publish_pb2.POST_STATUS_SCHEDULED,
    **extra: Any,
) -> publish_pb2.Post:
    post = publish_pb2.Post(
        organization_id=ORG,
        post_uuid=post_uuid,
        kind=publish_pb2.POST_KIND_STORY,
        status=status,
        account="sunny.shop",
        preview_url="https://media.example/p.png",
        **extra,
    )
    post.date.FromDatetime(when)
    return post


def test_the_calendar_shows_a_week_and_a_month_and_moves(world: World) -> None:
    monday = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    draft_uuid = "6f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e61"
    from_draft = story_uuid(ORG, draft_uuid, 1)
    world.render.drafts = [
        render_pb2.Draft(
            draft_uuid=draft_uuid, name="Spring", user_post=render_pb2.DRAFT_USER_POST_SCHEDULED
        )
    ]
    social = publish_pb2.Post(
        post_uuid="s1",
        kind=publish_pb2.POST_KIND_SOCIAL,
        status=publish_pb2.POST_STATUS_FAILED,
        platform="mastodon",
        post_type="POST",
        social_account_id="<b>acct</b>",
    )
    social.date.FromDatetime(monday + timedelta(days=2))
    named = publish_pb2.Post(
        post_uuid="s2", kind=publish_pb2.POST_KIND_SOCIAL, social_account_id="sa_1"
    )
    named.date.FromDatetime(monday + timedelta(days=3))
    world.publish.posts = [
        named,
        social,
        story(from_draft, monday + timedelta(hours=1)),
        story("api-story", monday, publish_pb2.POST_STATUS_EXECUTED),
        story("next-month", monday + timedelta(days=20)),
    ]
    week = world.client.simulate_get(
        f"/o/{ORG}/calendar", query_string="view=week&date=2026-11-26", headers=session_cookie()
    )
    assert week.status_code == 200
    assert "23\N{EN DASH}29 Nov 2026" in week.text
    assert f'href="/o/{ORG}/drafts/{draft_uuid}" data-post="{from_draft}"' in week.text
    assert f'href="/o/{ORG}/posts/story/api-story"' in week.text
    assert 'class="cal-post b-failed"' in week.text and 'class="cal-post b-executed"' in week.text
    assert "&lt;b&gt;acct&lt;/b&gt;" in week.text and "<b>acct</b>" not in week.text
    assert "next-month" not in week.text
    assert "@sunny.pages" in week.text  # a social post shows its account's username
    assert '<span class="stat-value">7</span> credits left' in week.text
    assert "date=2026-11-19" in week.text and "date=2026-12-03" in week.text  # previous / next
    # The API story comes first on Monday: a day's posts are in time order.
    assert week.text.index("api-story") < week.text.index(from_draft)

    month = world.client.simulate_get(
        f"/o/{ORG}/calendar", query_string="view=month&date=2026-12-10", headers=session_cookie()
    )
    assert "December 2026" in month.text
    assert 'data-day="2026-11-30"' in month.text and 'data-day="2027-01-03"' in month.text
    assert 'data-post="next-month"' in month.text and "api-story" not in month.text
    assert "date=2026-11-01" in month.text and "date=2027-01-01" in month.text
    assert "may be missing" not in month.text
    # The calendar asks for exactly its period, page after page: no cap on busy months.
    world.publish.posts = [
        story(f"busy-{n}", datetime(2026, 12, 31, tzinfo=UTC) - timedelta(minutes=30 * n))
        for n in range(1200)
    ]
    world.publish.listed.clear()
    busy = world.client.simulate_get(
        f"/o/{ORG}/calendar", query_string="view=month&date=2026-12-10", headers=session_cookie()
    )
    assert busy.text.count('data-post="busy-') == 1200
    assert [r.page_token for r in world.publish.listed] == ["", "older:500", "older:1000"]
    bounds = {
        (r.date_from.ToDatetime(tzinfo=UTC), r.date_to.ToDatetime(tzinfo=UTC))
        for r in world.publish.listed
    }
    assert bounds == {(datetime(2026, 11, 30, tzinfo=UTC), datetime(2027, 1, 4, tzinfo=UTC))}
    for bad in ("view=year", "date=2026-13-01"):
        answer = world.client.simulate_get(
            f"/o/{ORG}/calendar", query_string=bad, headers=session_cookie()
        )
        assert answer.status_code == 404


def _pager_link(text: str, rel: str) -> str:
    found = re.search(rf'rel="{rel}" href="/o/{ORG}/posts\?([^"]+)"', text)
    assert found, f"no {rel} link"
    return html.unescape(found.group(1))


def test_the_posts_list_pages_past_500_and_back(world: World) -> None:
    start = datetime(2026, 11, 23, tzinfo=UTC)
    world.publish.posts = [
        story(f"post-{n:03}", start - timedelta(hours=n), publish_pb2.POST_STATUS_EXECUTED)
        for n in range(650)
    ]
    page = world.client.simulate_get(f"/o/{ORG}/posts", headers=session_cookie())
    assert page.text.count("<tr data-post=") == 100
    assert 'rel="prev"' not in page.text
    assert 'data-testid="credits"' in page.text
    for _ in range(6):  # Older, page after page, past the 500th post
        page = world.client.simulate_get(
            f"/o/{ORG}/posts", query_string=_pager_link(page.text, "next"), headers=session_cookie()
        )
    assert page.text.count("<tr data-post=") == 50
    assert 'data-post="post-600"' in page.text and 'rel="next"' not in page.text
    assert "Posts 601\N{EN DASH}650" in page.text and "page 7" in page.text
    newer = world.client.simulate_get(
        f"/o/{ORG}/posts", query_string=_pager_link(page.text, "prev"), headers=session_cookie()
    )
    assert "Posts 501\N{EN DASH}600" in newer.text and 'data-post="post-500"' in newer.text
    assert set(world.publish.limits) == {100}
    for bad in ("page=0", "page=x", "token=garbage"):
        answer = world.client.simulate_get(
            f"/o/{ORG}/posts", query_string=bad, headers=session_cookie()
        )
        assert answer.status_code == 404


def test_a_post_has_its_own_page_and_cancel_comes_back_to_it(world: World) -> None:
    world.publish.posts = [story("p1", datetime(2026, 11, 23, 9, 0, tzinfo=UTC))]
    page = world.client.simulate_get(f"/o/{ORG}/posts/story/p1", headers=session_cookie())
    assert page.status_code == 200
    assert "Photoapp story" in page.text and "23 Nov 2026, 09:00 UTC" in page.text
    assert 'name="back" value="post"' in page.text and "Cancel post" in page.text
    answer = admin_post(
        world,
        f"/o/{ORG}/posts",
        {"action": "cancel", "kind": "story", "post_uuid": "p1", "back": "post"},
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/o/{ORG}/posts/story/p1"
    for missing in ("story/nope", "tweet/p1"):
        gone = world.client.simulate_get(f"/o/{ORG}/posts/{missing}", headers=session_cookie())
        assert gone.status_code == 404
