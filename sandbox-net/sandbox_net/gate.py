"""What every platform call passes first: the switches, then the bearer token."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import Any

import falcon

from sandbox_net.errors import PlatformHttpError, bad_request
from sandbox_net.holds import Hold, Holds
from sandbox_net.state import Record, Store
from sandbox_net.switches import failure_for
from sandbox_net.tokens import TokenClaims, TokenSigner
from storypost_runtime.component import component


@component
class Gate:
    _: KW_ONLY
    store: Store
    signer: TokenSigner
    sleep: Callable[[float], None] = time.sleep

    def apply_switch(
        self, platform: str, account_id: str | None, *, token_call: bool, path: str | None = None
    ) -> float:
        """Delays or fails the call as the platform's (or the account's, or the endpoint's)
        switch says; returns how long to hold the answer after performing it (late-answer)."""
        switch = self.store.take_switch(platform, account_id, path)
        if switch is None:
            return 0.0
        if switch.mode == "slow" and switch.seconds > 0:
            self.sleep(switch.seconds)
        if switch.mode == "late-answer":
            return switch.seconds
        failure = failure_for(switch, token_call=token_call)
        if failure is not None:
            raise failure
        return 0.0

    def enter(self, req: falcon.Request, platform: str) -> Record:
        """The account whose valid access token the call carries (after its switch)."""
        token = bearer_token(req)
        claims = self.signer.read(token) if token else None
        own = claims if claims is not None and claims.platform == platform else None
        late = self.apply_switch(
            platform, own.account_id if own else None, token_call=True, path=req.path
        )
        if late > 0:
            req.context.late_answer = (
                Hold(platform, own.account_id if own else None, req.method, req.path),
                late,
            )
        if own is None or own.kind != "at":
            raise PlatformHttpError(401, "invalid_token", "missing or invalid access token")
        if own.expires_at < time.time():
            raise PlatformHttpError(401, "token_expired", "the access token has expired")
        return self.account_of(own)

    def account_of(self, claims: TokenClaims) -> Record:
        with self.store.lock:
            found = self.store.account(claims.platform, claims.account_id)
            # Tokens outlive a restart without a data dir: rebuild the account from them.
            return found or self.store.ensure_account(claims.platform, claims.username)


@component
class LateAnswers:
    """Falcon middleware: holds the answer of a call a `late-answer` switch matched, after the
    platform performed it (what a caller with a shorter timeout, or one that died meanwhile,
    never sees), until its seconds pass or the hold is released."""

    holds: Holds

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, succeeded: bool
    ) -> None:
        late: tuple[Hold, float] | None = getattr(req.context, "late_answer", None)
        if late is not None:
            self.holds.hold(*late)


def bearer_token(req: falcon.Request) -> str | None:
    header = req.get_header("Authorization") or ""
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    # Graph-like APIs also accept the token as a query parameter.
    return req.get_param("access_token") or None


def json_body(req: falcon.Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is {})."""
    raw = req.bounded_stream.read()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise bad_request("the body must be JSON") from None
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    return body


def form_or_json(req: falcon.Request) -> dict[str, Any]:
    """A form-encoded body (OAuth's) or a JSON object."""
    if (req.content_type or "").startswith("application/x-www-form-urlencoded"):
        media = req.get_media()
        return {k: (v[-1] if isinstance(v, list) else v) for k, v in dict(media).items()}
    return json_body(req)
