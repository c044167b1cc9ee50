"""The events a webhook URL can receive, and the payload each delivery carries."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from storypost_runtime import vocabulary
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.vocabulary import EVENT_TYPES, PostKind

STORY = EVENT_TYPES[PostKind.STORY].name
SOCIAL = EVENT_TYPES[PostKind.SOCIAL].name

# The spec's two webhook events: what a URL receives unless it asks otherwise.
DEFAULT_EVENTS = vocabulary.DEFAULT_EVENTS
# Reel and clipapp events are on the bus too; the spec leaves their webhooks open, so a URL
# receives them only when it asks for them by name.
OPT_IN_EVENTS = vocabulary.OPT_IN_EVENTS
KNOWN_EVENTS: tuple[str, ...] = DEFAULT_EVENTS + OPT_IN_EVENTS
# A stored webhook without an `events` field predates social post events (spec: "URLs added
# before social post events existed receive only story events").
LEGACY_EVENTS: tuple[str, ...] = (STORY,)


def subscription(requested: Iterable[str]) -> list[str]:
    """The events a new URL receives: the defaults when none are named, else exactly those."""
    names: list[str] = []
    for raw in requested:
        name = raw.strip()
        if name and name not in names:
            names.append(name)
    unknown = [name for name in names if name not in KNOWN_EVENTS]
    if unknown:
        known = ", ".join(KNOWN_EVENTS)
        raise InvalidArgument(
            f"unknown event {unknown[0]!r}; known events: {known}",
            field_violations={"events": [f"unknown event {name!r}" for name in unknown]},
        )
    return names or list(DEFAULT_EVENTS)


def stored_events(doc: Mapping[str, Any]) -> list[str]:
    """The events a stored webhook receives (old records without the field: story only)."""
    events = doc.get("events")
    return list(LEGACY_EVENTS) if events is None else list(events)


def payload_json(event_type: str, data: Mapping[str, Any], *, test: bool = False) -> str:
    """The delivery body: `event` first, then the event's fields exactly as the spec lists
    them; `test: true` only on test deliveries. Serialized once, so retries send the same
    bytes (and the same signature input)."""
    body: dict[str, Any] = {"event": event_type}
    body.update((key, value) for key, value in data.items() if key not in ("event", "test"))
    if test:
        body["test"] = True
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def sample_payload(story_post_uuid: str, occurred_at: str) -> str:
    """'send test': a story event with a random storyPostUuid, status executed, test true."""
    data = {"storyPostUuid": story_post_uuid, "status": "executed", "occurredAt": occurred_at}
    return payload_json(STORY, data, test=True)
