"""Procedures the edge answers itself."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from edge.procedures.base import CallContext, Handler, JsonObject


def generate_uuid(_ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
    return {"uuid": str(uuid.uuid4())}


def handlers() -> dict[str, Handler]:
    return {"generate-uuid": generate_uuid}
