"""The draft editor (`editorUrl`): edit the HTML with a live preview, save a new version
(re-rendered), schedule it as a photoapp story or post it now, cancel those stories, delete."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import falcon
import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from edge.procedures.posts import POST_STATUSES
from edge.web.base import Form, Page, Web, field
from edge.web.draft_posts import (
    MAX_POSTS,
    DraftPosts,
    find_posts,
    user_post_after,
)
from edge.web.failures import PageError, page_error, page_errors, refusal
from edge.web.pages.gallery import DRAFT_STATUS, USER_POST
from edge.web.queue_slots import QueueChoice, chosen_queue, connected_accounts, story_queues
from edge.web.session import Viewer
from edge.web.views import EDITOR_CSP, format_when
from storypost.account.v1 import account_pb2
from storypost.publish.v1 import publish_pb2
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.vocabulary import PHOTOAPP

HTML_MAX = 10_485_760
URL_MAX = 2048


def parse_date(text: str, now: datetime, zone: ZoneInfo) -> Timestamp:
    """The form's `YYYY-MM-DDTHH:MM` (in the user's zone, as the form says), in the future."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise PageError(400, f"Enter the date and time as YYYY-MM-DD HH:MM ({zone.key}).") from None
    moment = moment.replace(tzinfo=zone) if moment.tzinfo is None else moment
    moment = moment.astimezone(UTC)
    if moment <= now:
        raise PageError(400, "Choose a time in the future, or use “Post now”.")
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def back_path(form: Form, draft_uuid: str) -> str:
    """Where a schedule form goes back to: the gallery (its folder) it came from, or the
    editor."""
    if field(form, "back") != "gallery":
        return f"/drafts/{draft_uuid}"
    folder = field(form, "folder")
    return f"/gallery?{urlencode({'folder': folder})}" if folder else "/gallery"


def get_draft(web: Web, org: str, draft_uuid: str) -> pb.Draft:
    """The draft as the editor and its status poll see it."""
    return web.render.GetDraft(
        pb.GetDraftRequest(
            organization_id=org, draft_uuid=draft_uuid, public_app_url=web.app_url(org)
        )
    )


class EditorPage(Page):
    label = "editor"

    def _draft(self, org: str, draft_uuid: str) -> pb.Draft:
        with page_errors("This draft"):
            return get_draft(self.web, org, draft_uuid)

    def _posts(self, org: str, draft: pb.Draft) -> DraftPosts:
        with page_errors():
            posts = find_posts(self.web.publish, org, draft.draft_uuid)
            wanted = user_post_after(posts, draft.user_post)
            if wanted != draft.user_post:
                draft.CopyFrom(self._set_user_post(org, draft.draft_uuid, wanted))
        return posts

    def _set_user_post(
        self, org: str, draft_uuid: str, user_post: pb.DraftUserPost.ValueType
    ) -> pb.Draft:
        return self.web.render.SetDraftUserPost(
            pb.SetDraftUserPostRequest(
                organization_id=org,
                draft_uuid=draft_uuid,
                user_post=user_post,
                public_app_url=self.web.app_url(org),
            )
        )

    def _design_and_accounts(
        self, org: str, draft: pb.Draft
    ) -> tuple[dict[str, str], list[account_pb2.ConnectedAccount]]:
        """What the editor's form holds, and the photoapp accounts a story can go to."""
        with page_errors("This draft"):
            source = self.web.render.GetDraftDesign(
                pb.GetDraftRequest(organization_id=org, draft_uuid=draft.draft_uuid)
            )
            accounts = list(
                self.web.accounts.ListConnectedAccounts(
                    account_pb2.ListConnectedAccountsRequest(
                        organization_id=org,
                        platform=PHOTOAPP.name,
                        connection=account_pb2.CONNECTION_DIRECT,
                    )
                ).accounts
            )
        kind = source.WhichOneof("source") or "html"
        return {"kind": kind, "value": source.url if kind == "url" else source.html}, accounts

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        draft_uuid: str,
        *,
        status: int = 200,
        edited: dict[str, str] | None = None,
        error: str = "",
    ) -> None:
        org = viewer.organization_id
        draft = self._draft(org, draft_uuid)
        deleted = draft.status == pb.DRAFT_STATUS_DELETED
        design: dict[str, str] = {"kind": "html", "value": ""}
        accounts: list[account_pb2.ConnectedAccount] = []
        posts = DraftPosts([], "")
        if not deleted:
            design, accounts = self._design_and_accounts(org, draft)
            posts = self._posts(org, draft)
        if edited:
            design = edited
        status_name = DRAFT_STATUS.get(draft.status, "rendering")
        self.show(
            req,
            resp,
            viewer,
            "editor.html",
            active="gallery",
            title=draft.name,
            status=status,
            csp=EDITOR_CSP,
            draft=draft,
            draft_status=status_name,
            user_post=USER_POST.get(draft.user_post, ""),
            design=design,
            accounts=accounts,
            live_accounts=[a for a in accounts if not a.disconnected],
            posts=[
                {"p": p, "status": POST_STATUSES.word.get(p.status, "scheduled")}
                for p in posts.posts
            ],
            next_post_uuid=posts.next_uuid,
            can_schedule=len(posts.posts) < MAX_POSTS,
            version_uuid=str(uuid.uuid4()),
            deleted=deleted,
            error=error,
        )

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str, draft_uuid: str
    ) -> None:
        viewer = self.begin(req, organization_id)
        self._show(req, resp, viewer, draft_uuid)

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str, draft_uuid: str
    ) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        action = field(form, "action")
        back = back_path(form, draft_uuid)
        try:
            if action == "save":
                self._save(req, resp, viewer, draft_uuid, form)
            elif action in ("schedule", "post-now", "queue"):
                self._schedule(resp, viewer, draft_uuid, form, action=action)
            elif action == "cancel-post":
                self._cancel(resp, viewer, draft_uuid, form)
            elif action == "delete":
                self._delete(resp, viewer, draft_uuid)
            else:
                raise PageError(400, "Unknown action.")
        except PageError as failure:
            if failure.status not in (400, 429) or action == "save":
                raise
            # Scheduling and cancel problems are shown on the page the form was on (the
            # editor, edits untouched, or the gallery).
            self.done(resp, viewer, back, failure.message, "error")

    def _save(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        draft_uuid: str,
        form: Form,
    ) -> None:
        org = viewer.organization_id
        kind = "url" if field(form, "kind") == "url" else "html"
        value = field(form, kind)
        edited = {"kind": kind, "value": value}
        problem = ""
        if not value.strip():
            problem = (
                "The page is empty. Write some HTML first."
                if kind == "html"
                else ("Enter the address of the page.")
            )
        elif kind == "html" and len(value) > HTML_MAX:
            problem = f"The page has {len(value):,} characters; at most {HTML_MAX:,} are allowed."
        elif kind == "url" and (
            len(value) > URL_MAX or not value.startswith(("http://", "https://"))
        ):
            problem = "The address must start with http:// or https:// (at most 2048 characters)."
        if problem:
            self._show(req, resp, viewer, draft_uuid, status=400, edited=edited, error=problem)
            return
        design = pb.Design(url=value) if kind == "url" else pb.Design(html=value)
        try:
            saved = self.web.render.SaveDraftVersion(
                pb.SaveDraftVersionRequest(
                    organization_id=org,
                    draft_uuid=draft_uuid,
                    version_uuid=field(form, "version_uuid") or str(uuid.uuid4()),
                    design=design,
                    public_app_url=self.web.app_url(org),
                ),
                timeout=self.web.settings.render_deadline_seconds,
            )
        except grpc.RpcError as error:
            failure = refusal(error, what="This draft", shown=(400, 429))
            self._show(
                req,
                resp,
                viewer,
                draft_uuid,
                status=failure.status,
                edited=edited,
                error=failure.message,
            )
            return
        text = f"Version {saved.version} saved."
        if saved.status == pb.DRAFT_STATUS_RENDERING:
            text += " It is being rendered; the preview appears when it is ready."
        if saved.warnings:
            text += " Warnings: " + "; ".join(saved.warnings)
        self.done(resp, viewer, f"/drafts/{draft_uuid}", text)

    def _queue(self, org: str, form: Form) -> QueueChoice:
        """The photoapp queue the gallery's form names."""
        try:
            queues = self.web.publish.ListQueues(
                publish_pb2.ListQueuesRequest(organization_id=org)
            ).queues
            choices = story_queues(queues, connected_accounts(self.web.accounts, org))
        except grpc.RpcError as error:
            raise page_error(error) from None
        chosen = chosen_queue(choices, field(form, "queue"))
        if chosen is None:
            raise PageError(400, "That queue does not exist any more. Reload the page.")
        return chosen

    def _schedule(
        self, resp: falcon.Response, viewer: Viewer, draft_uuid: str, form: Form, *, action: str
    ) -> None:
        """`schedule` (a date), `post-now` or `queue` (the queue's next free slot)."""
        org = viewer.organization_id
        now = action == "post-now"
        queue = self._queue(org, form) if action == "queue" else None
        username = queue.username if queue else field(form, "photoapp_username")
        if not username:
            raise PageError(400, "Choose a connected photoapp account first.")
        post_uuid = field(form, "post_uuid")
        request = publish_pb2.ScheduleStoryRequest(
            organization_id=org, story_post_uuid=post_uuid, photoapp_username=username
        )
        if queue is not None:
            request.queue_name = queue.queue_name
        elif not now:
            request.date.CopyFrom(parse_date(field(form, "date"), datetime.now(UTC), viewer.zone))
        draft = self._draft(org, draft_uuid)
        if draft.status == pb.DRAFT_STATUS_DELETED:
            raise PageError(400, "This draft was deleted.")
        posts = self._posts(org, draft)
        if post_uuid != posts.next_uuid and not posts.owns(post_uuid):
            raise PageError(400, "This page is out of date. Reload it and try again.")
        with page_errors("This draft"):
            request.design.CopyFrom(
                self.web.render.GetDraftDesign(
                    pb.GetDraftRequest(organization_id=org, draft_uuid=draft_uuid)
                )
            )
            scheduled = self.web.publish.ScheduleStory(
                request, timeout=self.web.settings.render_deadline_seconds
            )
            self._set_user_post(
                org,
                draft_uuid,
                pb.DRAFT_USER_POST_POSTED if now else pb.DRAFT_USER_POST_SCHEDULED,
            )
        post = scheduled.post
        when = format_when(post.date, zone=viewer.zone)
        if now:
            text = f"The story is being posted to @{username} now."
        elif queue is not None:
            text = f"“{draft.name}” takes the next free slot of {queue.label}: {when}."
        else:
            text = f"The story is scheduled for {when} on @{username}."
        if scheduled.warnings:
            text += " Warnings: " + "; ".join(scheduled.warnings)
        self.done(resp, viewer, back_path(form, draft_uuid), text)

    def _cancel(self, resp: falcon.Response, viewer: Viewer, draft_uuid: str, form: Form) -> None:
        org = viewer.organization_id
        post_uuid = field(form, "post_uuid")
        draft = self._draft(org, draft_uuid)
        if not find_posts(self.web.publish, org, draft_uuid).owns(post_uuid):
            raise PageError(400, "That story was not scheduled from this draft.")
        with page_errors("This story"):
            self.web.publish.CancelStory(
                publish_pb2.GetPostRequest(organization_id=org, post_uuid=post_uuid)
            )
        self._posts(org, draft)
        self.done(resp, viewer, f"/drafts/{draft_uuid}", "The story was canceled.")

    def _delete(self, resp: falcon.Response, viewer: Viewer, draft_uuid: str) -> None:
        org = viewer.organization_id
        with page_errors("This draft"):
            deleted = self.web.render.DeleteDraft(
                pb.DeleteDraftRequest(
                    organization_id=org,
                    draft_uuid=draft_uuid,
                    public_app_url=self.web.app_url(org),
                    by_user=True,
                )
            )
        self.done(resp, viewer, "/gallery", f"Draft “{deleted.name}” was deleted.")


class DraftStatus(Page):
    """GET /o/<org>/drafts/<uuid>/status: JSON the editor polls while a version renders."""

    label = "draft-status"

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str, draft_uuid: str
    ) -> None:
        req.context.procedure = "app:draft-status"
        resp.cache_control = ["no-store"]
        viewer = self.web.sessions.viewer(req, organization_id)
        if viewer is None:
            resp.status = 401
            resp.media = {"errorMessage": "not signed in"}
            return
        try:
            draft = get_draft(self.web, organization_id, draft_uuid)
        except grpc.RpcError as error:
            failure = page_error(error, what="This draft")
            resp.status = failure.status
            resp.media = {"errorMessage": failure.message}
            return
        answer: dict[str, Any] = {
            "draftUuid": draft.draft_uuid,
            "status": DRAFT_STATUS.get(draft.status, "rendering"),
            "version": draft.version,
            "previewUrl": draft.preview_url,
            "warnings": list(draft.warnings),
            "errorMessage": draft.error_message,
        }
        resp.text = json.dumps(answer)
        resp.content_type = falcon.MEDIA_JSON
