"""Mention stickers: account-svc resolves each username through a connected photoapp account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc

from render_svc.stickers import Plan
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.status import details_from

log = get_logger(__name__)


@dataclass(frozen=True)
class Resolved:
    user_id: str
    username: str


class MentionLookup(Protocol):
    """Resolves one username: a Resolved, or a warning sentence; raises ResourceExhausted."""

    async def resolve(self, organization_id: str, username: str) -> Resolved | str: ...


@component
class AccountsMentionClient:
    """ResolveMention of account-svc, its answers turned into our rules."""

    stub: object
    timeout_seconds: float = 10.0

    async def resolve(self, organization_id: str, username: str) -> Resolved | str:
        request = pb.ResolveMentionRequest(organization_id=organization_id, username=username)
        try:
            reply = await self.stub.ResolveMention(request, timeout=self.timeout_seconds)  # type: ignore[attr-defined]
        except grpc.RpcError as error:
            details = details_from(error)
            code = details.code
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                # Every connected account is busy: the caller answers 429 and stores nothing.
                raise ResourceExhausted(
                    "all connected photoapp accounts are busy resolving mentions; retry later "
                    "with the same UUID",
                    retry_after_seconds=details.retry_after_seconds or 5,
                ) from None
            if code == grpc.StatusCode.NOT_FOUND:
                return (
                    f"mention @{username}: photoapp has no user with this username; the "
                    "sticker is kept without a link to a user"
                )
            if code == grpc.StatusCode.FAILED_PRECONDITION:
                reason = details.message or "the organization has no connected photoapp account"
                return (
                    f"mention @{username} was not resolved: {reason}; the sticker is kept "
                    "without a link to a user"
                )
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise Unavailable("account-svc is not answering; retry later") from None
            log.warning("mention resolution failed", code=code.name, message=details.message)
            return f"mention @{username} was not resolved; the sticker is kept without a link"
        return Resolved(reply.photoapp_user_id, reply.username or username)


async def resolve_mentions(
    lookup: MentionLookup, organization_id: str, mentions: Sequence[Plan]
) -> list[str]:
    """Resolves each distinct username once, in order; fills the plans; returns warnings."""
    warnings: list[str] = []
    answers: dict[str, Resolved | str] = {}
    for plan in mentions:
        username = str(plan.values["username"])
        key = username.lower()
        if key not in answers:
            answers[key] = await lookup.resolve(organization_id, username)
            if isinstance(answers[key], str):
                warnings.append(str(answers[key]))
        answer = answers[key]
        if isinstance(answer, Resolved):
            plan.photoapp_user_id = answer.user_id
            plan.values["username"] = answer.username
            plan.attributes["username"] = answer.username
    return warnings
