"""Gallery: the drafts of one folder (or the top level) with previews and status; a ready
draft is added to a photoapp account's queue from its card (the editor schedules it)."""

from __future__ import annotations

from datetime import datetime

import falcon
import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from edge.procedures.media import DRAFT_STATUSES
from edge.web.base import Page
from edge.web.draft_posts import next_story_uuids
from edge.web.failures import PageError, page_errors
from edge.web.queue_slots import QueueChoice, connected_accounts, story_queues
from storypost.publish.v1 import publish_pb2
from storypost.render.v1 import render_pb2 as pb

PAGE_SIZE = 48
DRAFT_STATUS = DRAFT_STATUSES.word
USER_POST = {
    pb.DRAFT_USER_POST_SCHEDULED: "scheduled",
    pb.DRAFT_USER_POST_POSTED: "posted",
}


def parse_before(text: str) -> Timestamp | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PageError(400, "That page of the gallery does not exist.") from None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


class GalleryPage(Page):
    label = "gallery"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        folder = req.get_param("folder") or ""
        before = parse_before(req.get_param("before") or "")
        with page_errors():
            folders = list(
                self.web.render.ListDraftFolders(
                    pb.ListDraftFoldersRequest(organization_id=organization_id)
                ).folder_names
            )
            listing = pb.ListDraftsRequest(
                organization_id=organization_id,
                folder_name=folder,
                limit=PAGE_SIZE + 1,
                public_app_url=self.web.app_url(organization_id),
            )
            if before is not None:
                listing.created_before.CopyFrom(before)
            drafts = list(self.web.render.ListDrafts(listing).drafts)
        more = len(drafts) > PAGE_SIZE
        drafts = drafts[:PAGE_SIZE]
        rendering = any(d.status == pb.DRAFT_STATUS_RENDERING for d in drafts)
        queues = self._story_queues(organization_id)
        ready = [d.draft_uuid for d in drafts if d.status == pb.DRAFT_STATUS_READY]
        next_uuids = next_story_uuids(self.web.publish, organization_id, ready) if queues else {}
        self.show(
            req,
            resp,
            viewer,
            "gallery.html",
            active="gallery",
            title=f"Gallery · {folder}" if folder else "Gallery",
            folders=folders,
            folder=folder,
            drafts=[
                {
                    "d": d,
                    "status": DRAFT_STATUS.get(d.status, "rendering"),
                    "user_post": USER_POST.get(d.user_post, ""),
                    "video": d.media_kind == pb.MEDIA_KIND_VIDEO,
                    "updated": d.updated_at if d.HasField("updated_at") else d.created_at,
                    "next_uuid": next_uuids.get(d.draft_uuid, ""),
                }
                for d in drafts
            ],
            # Full precision: the next page starts right after the last draft shown.
            older=drafts[-1].created_at.ToJsonString() if more else "",
            queues=queues,
            # A rendering draft's card fills in by itself: the page reloads until it is done.
            refresh=4 if rendering else 0,
        )

    def _story_queues(self, organization_id: str) -> list[QueueChoice]:
        """The queues a draft can be added to; none (no forms) when they cannot be had now."""
        try:
            queues = self.web.publish.ListQueues(
                publish_pb2.ListQueuesRequest(organization_id=organization_id)
            ).queues
            if not queues:
                return []
            return story_queues(queues, connected_accounts(self.web.accounts, organization_id))
        except grpc.RpcError:
            return []
