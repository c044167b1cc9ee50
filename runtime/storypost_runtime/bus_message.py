"""The status event as a NATS message: written by the outbox relay, read by webhook-svc.

Subject `events.<type>`; body JSON `{id, type, organizationId, occurredAt, data}` where `data`
holds the event's spec fields and repeats `occurredAt` as an ISO string; headers
`Nats-Msg-Id` (the event id: JetStream drops re-published ids) and `X-Request-Id` when the
change had one. One class writes and parses it, so the two sides cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from storypost_runtime.bus import event_subject
from storypost_runtime.clock import iso_utc
from storypost_runtime.context import REQUEST_ID_HEADER

MSG_ID_HEADER = "Nats-Msg-Id"


@dataclass(frozen=True)
class BusMessage:
    id: str
    type: str
    organization_id: str
    occurred_at: datetime
    # The event's payload fields exactly as webhooks send them (camelCase, spec names).
    data: Mapping[str, Any]
    request_id: str | None = None

    @property
    def subject(self) -> str:
        return event_subject(self.type)

    def body(self) -> bytes:
        """The JSON body on the bus; `data` carries `occurredAt` as an ISO string."""
        occurred_at = iso_utc(self.occurred_at)
        body = {
            "id": self.id,
            "type": self.type,
            "organizationId": self.organization_id,
            "occurredAt": occurred_at,
            "data": {**self.data, "occurredAt": occurred_at},
        }
        return json.dumps(body, separators=(",", ":")).encode()

    def headers(self) -> dict[str, str]:
        headers = {MSG_ID_HEADER: self.id}
        if self.request_id:
            headers[REQUEST_ID_HEADER] = self.request_id
        return headers

    @classmethod
    def parse(cls, body: bytes, headers: Mapping[str, str] | None = None) -> BusMessage:
        """Raises ValueError for anything but a well-formed event. The request id is the
        header's as sent (a reader checks it, e.g. with `context.clean_request_id`)."""
        try:
            raw = json.loads(body)
            message = cls(
                id=str(raw["id"]),
                type=str(raw["type"]),
                organization_id=str(raw["organizationId"]),
                occurred_at=_utc(datetime.fromisoformat(raw["occurredAt"])),
                data=raw["data"],
                request_id=(headers or {}).get(REQUEST_ID_HEADER),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a status event: {error}") from None
        if not (message.id and message.type and message.organization_id) or not isinstance(
            message.data, dict
        ):
            raise ValueError("not a status event: empty id, type, organizationId or data")
        return message


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
