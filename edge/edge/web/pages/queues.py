"""An account's queues (`/accounts/<socialAccountId>/queues`): each queue's weekly slots, time
zone and next free slots; a form that creates or replaces one (`set-queue`: one line of times
per weekday), edit and delete. The calendar shows their free slots; the gallery adds drafts
to the photoapp accounts' queues."""

from __future__ import annotations

from typing import Any

import falcon
import grpc

from edge.web.base import Form, field
from edge.web.failures import PageError, page_errors, refusal
from edge.web.item_page import Ids, ItemFormPage
from edge.web.pages.users import time_zones
from edge.web.queue_slots import (
    WEEKDAYS,
    account_label,
    connected_accounts,
    parse_slots,
    times_by_day,
)
from edge.web.session import Viewer
from edge.web.views import format_when
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb

NAME_MOST = 64
NEXT_SLOTS = 5
DEFAULT_NAME = "default"


def queues_path(social_account_id: str) -> str:
    return f"/accounts/{social_account_id}/queues"


class QueuesPage(ItemFormPage):
    label = "queues"

    def get(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        editing = req.get_param("edit") or ""
        self._show(req, resp, viewer, ids["social_account_id"], editing=editing)

    def post(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        social_account_id = ids["social_account_id"]
        form = self.form(req, viewer)
        action = field(form, "action")
        if action == "save":
            self._save(req, resp, viewer, social_account_id, form)
        elif action == "delete":
            self._delete(resp, viewer, social_account_id, field(form, "name"))
        else:
            raise PageError(400, "Unknown action.")

    def _account(self, organization_id: str, social_account_id: str) -> apb.ConnectedAccount:
        with page_errors():
            accounts = connected_accounts(self.web.accounts, organization_id)
        found = next((a for a in accounts if a.social_account_id == social_account_id), None)
        if found is None:
            raise PageError(404, "This account is not connected to the workspace.")
        return found

    def _queues(self, viewer: Viewer, social_account_id: str) -> list[dict[str, Any]]:
        """The account's queues, each with its next free slots (none when they cannot be
        had now, e.g. the account is disconnected)."""
        org = viewer.organization_id
        with page_errors():
            queues = self.web.publish.ListQueues(
                pb.ListQueuesRequest(organization_id=org, social_account_id=social_account_id)
            ).queues
        calls = [
            (
                queue,
                self.web.publish.PreviewQueue.future(
                    pb.PreviewQueueRequest(
                        queue=pb.QueueRef(
                            organization_id=org,
                            social_account_id=social_account_id,
                            queue_name=queue.queue_name,
                        ),
                        count=NEXT_SLOTS,
                    )
                ),
            )
            for queue in queues
        ]
        shown: list[dict[str, Any]] = []
        for queue, call in calls:
            try:
                slots = list(call.result().slots)
            except grpc.RpcError:
                slots = []
            by_day = times_by_day(queue)
            shown.append(
                {
                    "q": queue,
                    "days": [(day, by_day[day]) for day in WEEKDAYS if by_day[day]],
                    "next": slots,
                }
            )
        return shown

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        social_account_id: str,
        *,
        status: int = 200,
        editing: str = "",
        entered: dict[str, str] | None = None,
        error: str = "",
    ) -> None:
        account = self._account(viewer.organization_id, social_account_id)
        queues = self._queues(viewer, social_account_id)
        edited = next((q["q"] for q in queues if q["q"].queue_name == editing), None)
        if entered is None:
            entered = {
                "name": edited.queue_name if edited else ("" if queues else DEFAULT_NAME),
                "time_zone": edited.time_zone if edited else viewer.zone.key,
                **times_by_day(edited),
            }
        label = account_label(account)
        self.show(
            req,
            resp,
            viewer,
            "queues.html",
            active="accounts",
            title=f"Queues · {label}",
            status=status,
            account=account,
            account_label=label,
            queues=queues,
            weekdays=WEEKDAYS,
            zones=time_zones(),
            entered=entered,
            editing=edited.queue_name if edited else "",
            error=error,
            name_most=NAME_MOST,
        )

    def _save(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        social_account_id: str,
        form: Form,
    ) -> None:
        entered = {key: field(form, key).strip() for key in ("name", "time_zone", *WEEKDAYS)}
        name = entered["name"] or DEFAULT_NAME
        slots, problem = parse_slots(entered)
        if not problem and len(name) > NAME_MOST:
            problem = f"A queue's name has at most {NAME_MOST} characters."
        if problem:
            self._show(
                req, resp, viewer, social_account_id, status=400, entered=entered, error=problem
            )
            return
        try:
            saved = self.web.publish.SetQueue(
                pb.SetQueueRequest(
                    organization_id=viewer.organization_id,
                    social_account_id=social_account_id,
                    queue_name=name,
                    time_zone=entered["time_zone"] or viewer.zone.key,
                    slots=slots,
                )
            )
        except grpc.RpcError as error:
            message = refusal(error).message
            self._show(
                req, resp, viewer, social_account_id, status=400, entered=entered, error=message
            )
            return
        text = f"Queue “{saved.queue.queue_name}” saved with {len(saved.queue.slots)} weekly slots."
        if saved.next_slots:
            text += f" Its next free slot: {format_when(saved.next_slots[0], zone=viewer.zone)}."
        self.done(resp, viewer, queues_path(social_account_id), text)

    def _delete(
        self, resp: falcon.Response, viewer: Viewer, social_account_id: str, name: str
    ) -> None:
        ref = pb.QueueRef(
            organization_id=viewer.organization_id,
            social_account_id=social_account_id,
            queue_name=name,
        )
        self.answered(
            resp,
            viewer,
            queues_path(social_account_id),
            lambda: self.web.publish.DeleteQueue(ref),
            f"Queue “{name}” was deleted. Posts already scheduled in it keep their dates.",
        )
