"""The pages of one post or one account (`/posts/<kind>/<post_uuid>…`,
`/accounts/<socialAccountId>/…`): one responder signs the viewer in and hands the route's ids
to the page's `get`, or to its `post` on a page that takes forms."""

from __future__ import annotations

from collections.abc import Mapping

import falcon

from edge.web.base import Page
from edge.web.session import Viewer

# The route's ids after the organization's: {"kind", "post_uuid"} or {"social_account_id"}.
Ids = Mapping[str, str]


class ItemPage(Page):
    """GET answers with `get` once the viewer is signed in."""

    def respond(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str, **ids: str
    ) -> None:
        viewer = self.begin(req, organization_id)
        answer = self.post if req.method == "POST" else self.get
        answer(req, resp, viewer, ids)

    on_get = respond

    def get(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        raise NotImplementedError

    def post(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        """A posted form (on an `ItemFormPage`); it checks the form's token with `form`."""
        raise NotImplementedError


class ItemFormPage(ItemPage):
    """An item page that takes forms: POST answers with `post`."""

    on_post = ItemPage.respond
