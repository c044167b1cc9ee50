"""Posts: scheduled and past posts of every kind with status, preview, errorMessage and
permalink, a page per post; cancel a scheduled one. The credit balance is shown with them:
due social posts wait while it is not positive."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import falcon
import grpc

from edge.procedures.posts import POST_STATUSES
from edge.web.base import Page, Web, field
from edge.web.failures import PageError, page_error, page_errors
from edge.web.item_page import Ids, ItemPage
from edge.web.session import Viewer
from edge.web.views import as_datetime
from storypost.account.v1 import account_pb2
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc

PAGE_SIZE = 100
KINDS = {
    "story": pb.POST_KIND_STORY,
    "reel": pb.POST_KIND_REEL,
    "clipapp": pb.POST_KIND_CLIPAPP,
    "social": pb.POST_KIND_SOCIAL,
}
KIND_KEY = {value: key for key, value in KINDS.items()}
KIND_LABEL = {
    pb.POST_KIND_STORY: "Photoapp story",
    pb.POST_KIND_REEL: "Photoapp reel",
    pb.POST_KIND_CLIPAPP: "Clipapp post",
    pb.POST_KIND_SOCIAL: "Social post",
}
STATUSES = POST_STATUSES.pb
# The spec's cancel rules: which states each kind can still be canceled in.
CANCELABLE = {
    pb.POST_KIND_STORY: {pb.POST_STATUS_SCHEDULED},
    pb.POST_KIND_REEL: {pb.POST_STATUS_SCHEDULED},
    pb.POST_KIND_CLIPAPP: {pb.POST_STATUS_SCHEDULED, pb.POST_STATUS_IN_PROGRESS},
    pb.POST_KIND_SOCIAL: {pb.POST_STATUS_SCHEDULED, pb.POST_STATUS_IN_PROGRESS},
}
# Story previews are presigned per request (GetStory), not part of ListPosts: this many of
# the listed stories get theirs, fetched at once.
PREVIEWS = 24


def kind_label(post: pb.Post) -> str:
    if post.kind == pb.POST_KIND_SOCIAL and post.platform:
        return f"{post.platform.capitalize()} {post.post_type.lower().replace('_', ' ')}".strip()
    return KIND_LABEL.get(post.kind, "Post")


def post_row(
    post: pb.Post, preview: str = "", names: dict[str, str] | None = None
) -> dict[str, Any]:
    """What the posts list, a post's page and the calendar show of one post. `names`: the
    usernames of social accounts (a social post names only its account's id)."""
    social = (names or {}).get(post.social_account_id, "")
    return {
        "p": post,
        "preview": post.preview_url or preview,
        "kind": kind_label(post),
        "kind_key": KIND_KEY.get(post.kind, ""),
        "status": POST_STATUSES.word.get(post.status, "scheduled"),
        "cancelable": post.status in CANCELABLE.get(post.kind, set()),
        "account": f"@{social}" if social else post.account or post.social_account_id,
    }


def busy(posts: list[pb.Post], previews: dict[str, str]) -> bool:
    """A post being published or due, or a story still rendering (asked for its preview, it
    has none yet): the page updates itself."""
    now = datetime.now(UTC)
    return any(
        p.status == pb.POST_STATUS_IN_PROGRESS
        or (p.status == pb.POST_STATUS_SCHEDULED and (as_datetime(p.date) or now) <= now)
        or (
            p.status == pb.POST_STATUS_SCHEDULED
            and p.kind == pb.POST_KIND_STORY
            and not p.preview_url
            and previews.get(p.post_uuid) == ""
        )
        for p in posts
    )


def story_previews(web: Web, organization_id: str, posts: list[pb.Post]) -> dict[str, str]:
    """Fresh preview URLs of the first stories, asked for in parallel; a story whose preview
    cannot be had now just shows none."""
    stories = [p for p in posts if p.kind == pb.POST_KIND_STORY and not p.preview_url]
    calls = [
        (
            post.post_uuid,
            web.publish.GetStory.future(
                pb.GetPostRequest(organization_id=organization_id, post_uuid=post.post_uuid)
            ),
        )
        for post in stories[:PREVIEWS]
    ]
    found: dict[str, str] = {}
    for post_uuid, call in calls:
        try:
            found[post_uuid] = call.result().preview_url
        except grpc.RpcError:
            continue
    return found


def account_names(web: Web, organization_id: str) -> dict[str, str]:
    """Social account id -> username; empty (ids shown) when account-svc cannot say now."""
    try:
        accounts = web.accounts.ListConnectedAccounts(
            account_pb2.ListConnectedAccountsRequest(organization_id=organization_id)
        ).accounts
    except grpc.RpcError:
        return {}
    return {a.social_account_id: a.username for a in accounts if a.username}


PostCall = Callable[[pb.GetPostRequest], pb.Post]


def post_calls(
    publish: publish_pb2_grpc.PublishServiceStub, kind: str
) -> tuple[PostCall, PostCall] | None:
    """(get, cancel): the RPCs of a kind of post (its key in KINDS); None for another."""
    calls = {
        "story": (publish.GetStory, publish.CancelStory),
        "reel": (publish.GetReel, publish.CancelReel),
        "clipapp": (publish.GetClipappPost, publish.CancelClipappPost),
        "social": (publish.GetSocialPost, publish.CancelSocialPost),
    }
    return calls.get(kind)


def credit_balance(web: Web, organization_id: str) -> int | None:
    """The workspace's credits; None (not shown) when account-svc cannot say right now."""
    try:
        return web.accounts.GetCredits(
            account_pb2.GetCreditsRequest(organization_id=organization_id)
        ).balance
    except grpc.RpcError:
        return None


def page_number(text: str) -> int:
    try:
        number = int(text or "1")
    except ValueError:
        number = 0
    if number < 1:
        raise PageError(404, "That page of posts does not exist.")
    return number


class PostsPage(Page):
    label = "posts"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        kind = req.get_param("kind") or ""
        status = req.get_param("status") or ""
        number = page_number(req.get_param("page") or "")
        # The page's place in the listing: a token of publish-svc's (none: the newest page).
        token = req.get_param("token") or ""
        listing = pb.ListPostsRequest(
            organization_id=organization_id, limit=PAGE_SIZE, page_token=token
        )
        if kind in KINDS:
            listing.kinds.append(KINDS[kind])
        if status in STATUSES:
            listing.statuses.append(STATUSES[status])
        try:
            listed = self.web.publish.ListPosts(listing)
        except grpc.RpcError as error:
            if token and error.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise PageError(404, "That page of posts does not exist.") from None
            raise page_error(error) from None
        if not listed.previous_page_token:
            number = 1  # back at the newest posts, whatever the link said
        posts = list(listed.posts)
        previews = story_previews(self.web, organization_id, posts)
        names = (
            account_names(self.web, organization_id)
            if any(p.kind == pb.POST_KIND_SOCIAL for p in posts)
            else {}
        )
        self.show(
            req,
            resp,
            viewer,
            "posts.html",
            active="posts",
            title="Posts",
            posts=[post_row(p, previews.get(p.post_uuid, ""), names) for p in posts],
            kind=kind if kind in KINDS else "",
            status_filter=status if status in STATUSES else "",
            kinds=list(KINDS),
            statuses=list(STATUSES),
            page=number,
            first=(number - 1) * PAGE_SIZE + 1,
            older=listed.next_page_token,
            newer=listed.previous_page_token,
            credits=credit_balance(self.web, organization_id),
            refresh=5 if busy(posts, previews) else 0,
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        if field(form, "action") != "cancel":
            raise PageError(400, "Unknown action.")
        kind = field(form, "kind")
        calls = post_calls(self.web.publish, kind)
        if calls is None:
            raise PageError(400, "Unknown kind of post.")
        _get, cancel = calls
        post_uuid = field(form, "post_uuid")
        # Back to the page the form was on: the list, or the post's own page.
        back = f"/posts/{kind}/{post_uuid}" if field(form, "back") == "post" else "/posts"
        request = pb.GetPostRequest(organization_id=organization_id, post_uuid=post_uuid)
        self.answered(
            resp,
            viewer,
            back,
            lambda: cancel(request),
            "The post was canceled.",
            what="This post",
            shown=(400, 429),
        )


class PostPage(ItemPage):
    """One post: what the list shows, with a large preview; the calendar links here."""

    label = "post"

    def get(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        organization_id, kind = viewer.organization_id, ids["kind"]
        post_uuid = ids["post_uuid"]
        calls = post_calls(self.web.publish, kind)
        if calls is None:
            raise PageError(404, "This post was not found.")
        get, _cancel = calls
        with page_errors("This post"):
            post = get(pb.GetPostRequest(organization_id=organization_id, post_uuid=post_uuid))
        social = post.kind == pb.POST_KIND_SOCIAL
        row = post_row(post, names=account_names(self.web, organization_id) if social else None)
        self.show(
            req,
            resp,
            viewer,
            "post.html",
            active="posts",
            title=row["kind"],
            row=row,
            credits=credit_balance(self.web, organization_id) if social else None,
            refresh=5 if busy([post], {post.post_uuid: post.preview_url}) else 0,
        )
