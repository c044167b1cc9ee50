"""Posts: scheduled and past posts of every kind with status, preview, errorMessage and
permalink; cancel a scheduled one."""

from __future__ import annotations

import falcon
import grpc

from edge.web.base import Page, field
from edge.web.draft_posts import POST_STATUS
from edge.web.failures import PageError, page_error
from storypost.publish.v1 import publish_pb2 as pb

LIMIT = 100
KINDS = {
    "story": pb.POST_KIND_STORY,
    "reel": pb.POST_KIND_REEL,
    "clipapp": pb.POST_KIND_CLIPAPP,
    "social": pb.POST_KIND_SOCIAL,
}
KIND_LABEL = {
    pb.POST_KIND_STORY: "Photoapp story",
    pb.POST_KIND_REEL: "Photoapp reel",
    pb.POST_KIND_CLIPAPP: "Clipapp post",
    pb.POST_KIND_SOCIAL: "Social post",
}
STATUSES = {name: value for value, name in POST_STATUS.items()}
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


class PostsPage(Page):
    label = "posts"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        kind = req.get_param("kind") or ""
        status = req.get_param("status") or ""
        listing = pb.ListPostsRequest(organization_id=organization_id, limit=LIMIT)
        if kind in KINDS:
            listing.kinds.append(KINDS[kind])
        if status in STATUSES:
            listing.statuses.append(STATUSES[status])
        try:
            posts = list(self.web.publish.ListPosts(listing).posts)
        except grpc.RpcError as error:
            raise page_error(error) from None
        previews = self._previews(organization_id, posts)
        # A post still rendering (no preview yet) or being published updates by itself.
        busy = any(
            p.status == pb.POST_STATUS_IN_PROGRESS
            or (
                p.status == pb.POST_STATUS_SCHEDULED
                and p.kind == pb.POST_KIND_STORY
                and not p.preview_url
            )
            for p in posts
        )
        self.show(
            req,
            resp,
            viewer,
            "posts.html",
            active="posts",
            title="Posts",
            posts=[
                {
                    "p": p,
                    "preview": p.preview_url or previews.get(p.post_uuid, ""),
                    "kind": kind_label(p),
                    "kind_key": next((k for k, v in KINDS.items() if v == p.kind), ""),
                    "status": POST_STATUS.get(p.status, "scheduled"),
                    "cancelable": p.status in CANCELABLE.get(p.kind, set()),
                }
                for p in posts
            ],
            kind=kind if kind in KINDS else "",
            status_filter=status if status in STATUSES else "",
            kinds=list(KINDS),
            statuses=list(STATUSES),
            refresh=5 if busy else 0,
        )

    def _previews(self, organization_id: str, posts: list[pb.Post]) -> dict[str, str]:
        """Fresh preview URLs of the first stories, asked for in parallel; a story whose
        preview cannot be had now just shows none."""
        stories = [p for p in posts if p.kind == pb.POST_KIND_STORY and not p.preview_url]
        calls = [
            (
                post.post_uuid,
                self.web.publish.GetStory.future(
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

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        if field(form, "action") != "cancel":
            raise PageError(400, "Unknown action.")
        kind = field(form, "kind")
        cancel = {
            "story": self.web.publish.CancelStory,
            "reel": self.web.publish.CancelReel,
            "clipapp": self.web.publish.CancelClipappPost,
            "social": self.web.publish.CancelSocialPost,
        }.get(kind)
        if cancel is None:
            raise PageError(400, "Unknown kind of post.")
        request = pb.GetPostRequest(
            organization_id=organization_id, post_uuid=field(form, "post_uuid")
        )
        try:
            cancel(request)
        except grpc.RpcError as error:
            failure = page_error(error, what="This post")
            if failure.status in (400, 429):
                self.done(resp, viewer, "/posts", failure.message, "error")
                return
            raise failure from None
        self.done(resp, viewer, "/posts", "The post was canceled.")
