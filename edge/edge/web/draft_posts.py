"""Stories a user scheduled from a draft in the editor, found again without a record of them.

The n-th story scheduled from a draft gets the UUID uuid5(namespace, "<org>/<draft>/<n>"),
so the editor finds a draft's stories by asking for n = 1, 2, … until one is unknown, and a
double submit of the schedule form (same n) is one story. render-svc records that a user
scheduled or posted the draft (SetDraftUserPost), which makes delete-draft answer 400; when
every story of the draft was canceled the record goes back to NONE.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import grpc

from storypost.publish.v1 import publish_pb2, publish_pb2_grpc
from storypost.render.v1 import render_pb2, render_pb2_grpc

NAMESPACE = uuid.UUID("5d8f3c1e-2b7a-4c9e-8f16-0a3b5c7d9e21")
# More stories than this from one draft are not looked for (the editor lists these).
MAX_POSTS = 20


def story_uuid(organization_id: str, draft_uuid: str, n: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{organization_id}/{draft_uuid.lower()}/{n}"))


@dataclass(frozen=True)
class DraftPosts:
    """The stories scheduled from one draft, oldest first, and the UUID of the next one."""

    posts: list[publish_pb2.Post]
    next_uuid: str

    def owns(self, post_uuid: str) -> bool:
        return any(post.post_uuid == post_uuid for post in self.posts)

    def all_canceled(self) -> bool:
        return bool(self.posts) and all(
            post.status == publish_pb2.POST_STATUS_CANCELED for post in self.posts
        )


def find_posts(
    publish: publish_pb2_grpc.PublishServiceStub, organization_id: str, draft_uuid: str
) -> DraftPosts:
    posts: list[publish_pb2.Post] = []
    for n in range(1, MAX_POSTS + 1):
        post_uuid = story_uuid(organization_id, draft_uuid, n)
        try:
            posts.append(
                publish.GetStory(
                    publish_pb2.GetPostRequest(organization_id=organization_id, post_uuid=post_uuid)
                )
            )
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            return DraftPosts(posts, post_uuid)
    return DraftPosts(posts, story_uuid(organization_id, draft_uuid, MAX_POSTS))


def next_story_uuids(
    publish: publish_pb2_grpc.PublishServiceStub, organization_id: str, draft_uuids: list[str]
) -> dict[str, str]:
    """`find_posts`' next UUID of each draft, asked for in rounds: n = 1 of every draft at once,
    then n = 2 of those that had a story 1, and so on (usually one or two rounds). A draft
    whose stories cannot be looked up now gets none."""
    found: dict[str, str] = {}
    waiting = list(draft_uuids)
    for n in range(1, MAX_POSTS + 1):
        calls = [
            (
                draft_uuid,
                story_uuid(organization_id, draft_uuid, n),
                publish.GetStory.future(
                    publish_pb2.GetPostRequest(
                        organization_id=organization_id,
                        post_uuid=story_uuid(organization_id, draft_uuid, n),
                    )
                ),
            )
            for draft_uuid in waiting
        ]
        waiting = []
        for draft_uuid, post_uuid, call in calls:
            try:
                call.result()
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.NOT_FOUND:
                    found[draft_uuid] = post_uuid
                continue
            waiting.append(draft_uuid)
        if not waiting:
            break
    for draft_uuid in waiting:
        found[draft_uuid] = story_uuid(organization_id, draft_uuid, MAX_POSTS)
    return found


def user_post_after(
    posts: DraftPosts, current: render_pb2.DraftUserPost.ValueType
) -> render_pb2.DraftUserPost.ValueType:
    """What render-svc should record for the draft, given its stories."""
    if current != render_pb2.DRAFT_USER_POST_NONE and posts.all_canceled():
        return render_pb2.DRAFT_USER_POST_NONE
    return current


# Drafts looked at per folder when the calendar links stories back to their drafts.
DRAFTS_PER_FOLDER = 200


def drafts_of_stories(
    render: render_pb2_grpc.RenderServiceStub,
    organization_id: str,
    story_uuids: set[str],
    app_url: str,
) -> dict[str, render_pb2.Draft]:
    """The draft each of these stories was scheduled from in the editor (stories scheduled
    through the API have none): the UUIDs of every scheduled or posted draft's stories,
    computed, not stored. Each folder's newest drafts are read at once; a draft that cannot be
    read now just gets no link."""
    if not story_uuids:
        return {}
    named = render.ListDraftFolders(
        render_pb2.ListDraftFoldersRequest(organization_id=organization_id)
    ).folder_names
    folders = ["", *named]
    calls = [
        render.ListDrafts.future(
            render_pb2.ListDraftsRequest(
                organization_id=organization_id,
                folder_name=folder,
                limit=DRAFTS_PER_FOLDER,
                public_app_url=app_url,
            )
        )
        for folder in folders
    ]
    found: dict[str, render_pb2.Draft] = {}
    for call in calls:
        try:
            drafts = call.result().drafts
        except grpc.RpcError:
            continue
        for draft in drafts:
            if draft.user_post == render_pb2.DRAFT_USER_POST_NONE:
                continue
            for n in range(1, MAX_POSTS + 1):
                post_uuid = story_uuid(organization_id, draft.draft_uuid, n)
                if post_uuid in story_uuids:
                    found[post_uuid] = draft
    return found
