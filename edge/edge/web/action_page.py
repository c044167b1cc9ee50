"""The settings pages' shape: one listing of what the workspace has, forms that each post an
`action`, and a refused form shown again with its reason and what was entered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import falcon
import grpc

from edge.web.base import NAV_PATHS, Form, Page, field
from edge.web.failures import PageError, page_errors, refusal
from edge.web.session import Viewer

Action = Callable[[falcon.Request, falcon.Response, Viewer, Form], None]


class ActionPage(Page):
    """GET shows the page; POST runs the method `actions` names for the form's `action`.
    The page's NAV key is its label."""

    template = ""
    title = ""
    # What the page's form holds before anything was entered.
    blank_form: Mapping[str, Any] = MappingProxyType({})

    @property
    def path(self) -> str:
        """Where the page is below /o/<org>: the path NAV lists under its label."""
        return NAV_PATHS[self.label]

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        """The page's own context: what it lists, from the backends."""
        raise NotImplementedError

    def actions(self) -> Mapping[str, Action]:
        """The POST handlers by the form's `action`."""
        raise NotImplementedError

    def show_page(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        *,
        status: int = 200,
        **entered: Any,
    ) -> None:
        with page_errors():
            listed = self.listing(viewer)
        self.show(
            req,
            resp,
            viewer,
            self.template,
            active=self.label,
            title=self.title,
            status=status,
            **listed,
            **(dict(self.blank_form) | entered),
        )

    def show_refused(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        error: grpc.RpcError,
        **entered: Any,
    ) -> None:
        """A form the service refused (400): the page again, the reason above the form and
        what was entered in it. Any other failure is the error page."""
        self.show_page(req, resp, viewer, status=400, error=refusal(error).message, **entered)

    def entered_name(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        form: Form,
        *,
        blank: str,
        most: int,
    ) -> str | None:
        """The form's `name`, stripped (`blank` when empty); None once the page answered 400
        because it is longer than `most`."""
        name = field(form, "name").strip() or blank
        if len(name) <= most:
            return name
        error = f"A name has at most {most} characters."
        self.show_page(req, resp, viewer, status=400, name=name, error=error)
        return None

    def asked[T](
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        call: Callable[[], T],
        **entered: Any,
    ) -> T | None:
        """What `call` answered; None once the page answered the service's refusal (400)
        with what was `entered`."""
        try:
            return call()
        except grpc.RpcError as error:
            self.show_refused(req, resp, viewer, error, **entered)
            return None

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        self.show_page(req, resp, viewer)

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        self.act(req, resp, viewer, self.form(req, viewer))

    def act(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form) -> None:
        """Runs the action the posted form names."""
        action = self.actions().get(field(form, "action"))
        if action is None:
            raise PageError(400, "Unknown action.")
        action(req, resp, viewer, form)
