"""The OAuth-like connect flow of every platform: authorize page, code, token, refresh."""

from __future__ import annotations

import html
import secrets
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

import falcon

from sandbox_net.errors import PlatformHttpError
from sandbox_net.gate import Gate, form_or_json
from sandbox_net.identity import normalize_username
from sandbox_net.state import Record
from sandbox_net.tokens import TokenClaims
from storypost_runtime.component import component

CODE_SECONDS = 600
_STYLE = (
    "body{font-family:sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}"
    "label{display:block;margin:1rem 0 .3rem}input,textarea{width:100%;padding:.5rem;"
    "box-sizing:border-box}button{margin:1rem .5rem 0 0;padding:.6rem 1.2rem}"
    ".error{color:#b00020}.note{color:#666;font-size:.9rem}"
)


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}"
        f"</title><meta name=viewport content='width=device-width'><style>{_STYLE}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def _redirect_target(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PlatformHttpError(400, "invalid_request", "redirect_uri must be an http(s) URL")
    return value


def parse_destinations(text: str) -> list[Record]:
    """`id:name:type` entries, one per line or comma separated (the name may hold colons)."""
    found: list[Record] = []
    for raw in text.replace(",", "\n").splitlines():
        entry = raw.strip()
        if not entry:
            continue
        ident, _, rest = entry.partition(":")
        name, _, kind = rest.rpartition(":")
        if not (ident and name and kind) or len(ident) > 64 or len(name) > 200 or len(kind) > 64:
            raise ValueError(f"linknet destination {entry!r} must look like id:name:type")
        found.append({"id": ident, "name": name, "type": kind})
    return found


@component
class Authorize:
    """GET: the consent page where the user types a username; POST: redirect with a code."""

    gate: Gate
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.gate.apply_switch(self.platform, None, token_call=False)
        params = {k: req.get_param(k) or "" for k in ("client_id", "redirect_uri", "state")}
        params["scope"] = req.get_param("scope") or ""
        _redirect_target(params["redirect_uri"])
        self._form(resp, params, error=None, status=200)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        form = form_or_json(req)
        params = {
            k: str(form.get(k) or "") for k in ("client_id", "redirect_uri", "state", "scope")
        }
        target = _redirect_target(params["redirect_uri"])
        if form.get("action") == "deny":
            self._redirect(resp, target, {"error": "access_denied", "state": params["state"]})
            return
        username = normalize_username(str(form.get("username") or ""))
        if username is None:
            self._form(resp, params, error="Enter a valid username (letters, digits, . and _).")
            return
        try:
            destinations = parse_destinations(str(form.get("linknet_destinations") or ""))
        except ValueError as error:
            self._form(resp, params, error=str(error))
            return
        account = self.gate.store.ensure_account(
            self.platform, username, str(form.get("display_name") or "").strip() or None
        )
        self.gate.apply_switch(self.platform, account["id"], token_call=False)
        code = secrets.token_urlsafe(24)
        with self.gate.store.lock:
            if self.platform == "photoapp" and "linknet_destinations" in form:
                account["linknetDestinations"] = destinations
            self.gate.store.codes[code] = {
                "platform": self.platform,
                "accountId": account["id"],
                "username": account["username"],
                "redirectUri": target,
                "clientId": params["client_id"],
                "expiresAt": time.time() + CODE_SECONDS,
            }
            self.gate.store.touch()
        self._redirect(resp, target, {"code": code, "state": params["state"]})

    @staticmethod
    def _redirect(resp: falcon.Response, target: str, query: dict[str, str]) -> None:
        separator = "&" if urlsplit(target).query else "?"
        resp.status = 302
        resp.location = target + separator + urlencode(query)

    def _form(
        self, resp: falcon.Response, params: dict[str, str], *, error: str | None, status: int = 400
    ) -> None:
        hidden = "".join(
            f"<input type=hidden name={k} value='{html.escape(v, quote=True)}'>"
            for k, v in params.items()
        )
        extra = (
            "<label for=ld>Linknet destinations (optional, one per line: id:name:type)</label>"
            "<textarea id=ld name=linknet_destinations rows=3></textarea>"
            if self.platform == "photoapp"
            else ""
        )
        message = f"<p class=error role=alert>{html.escape(error)}</p>" if error else ""
        body = (
            f"<p>An application asks to publish on your <b>{self.platform}</b> account. "
            "This is the storypost sandbox network: no real account is used.</p>"
            f"{message}<form method=post action='/{self.platform}/oauth/authorize'>{hidden}"
            "<label for=username>Username</label>"
            "<input id=username name=username required autocomplete=off>"
            "<label for=display_name>Display name (optional)</label>"
            f"<input id=display_name name=display_name>{extra}"
            "<button type=submit name=action value=allow>Allow</button>"
            "<button type=submit name=action value=deny formnovalidate>Deny</button></form>"
        )
        resp.status = status
        resp.content_type = falcon.MEDIA_HTML
        resp.text = _page(f"Sign in to {self.platform} (sandbox)", body)


@component
class Token:
    """POST: grant_type=authorization_code or refresh_token, answered like OAuth 2.0."""

    gate: Gate
    platform: str

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        form = form_or_json(req)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            claims = self._redeem(str(form.get("code") or ""), str(form.get("redirect_uri") or ""))
        elif grant == "refresh_token":
            claims = self._refresh(str(form.get("refresh_token") or ""))
        else:
            raise PlatformHttpError(
                400,
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token",
            )
        resp.media = self._issue(claims)

    def _redeem(self, code: str, redirect_uri: str) -> TokenClaims:
        with self.gate.store.lock:
            found = self.gate.store.codes.pop(code, None)
        if found is None or found["platform"] != self.platform:
            raise PlatformHttpError(400, "invalid_grant", "the code is unknown or was used")
        if found["expiresAt"] < time.time():
            raise PlatformHttpError(400, "invalid_grant", "the code has expired")
        if redirect_uri and redirect_uri != found["redirectUri"]:
            raise PlatformHttpError(400, "invalid_grant", "redirect_uri does not match")
        self.gate.apply_switch(self.platform, found["accountId"], token_call=False)
        return TokenClaims("at", self.platform, found["accountId"], found["username"], 0)

    def _refresh(self, token: str) -> TokenClaims:
        claims = self.gate.signer.read(token)
        own = claims if claims is not None and claims.platform == self.platform else None
        self.gate.apply_switch(self.platform, own.account_id if own else None, token_call=False)
        switch = self.gate.store.switch_for(self.platform, own.account_id if own else None)
        if switch is not None and switch.mode == "token-expired":
            raise PlatformHttpError(400, "invalid_grant", "the refresh token was revoked")
        if own is None or own.kind != "rt":
            raise PlatformHttpError(400, "invalid_grant", "the refresh token is invalid")
        if own.expires_at < time.time():
            raise PlatformHttpError(400, "invalid_grant", "the refresh token has expired")
        return own

    def _issue(self, claims: TokenClaims) -> dict[str, Any]:
        config = self.gate.store.config
        now = time.time()
        access = self.gate.signer.issue(
            TokenClaims(
                "at", self.platform, claims.account_id, claims.username,
                now + config.access_token_seconds,
            )
        )  # fmt: skip
        refresh = self.gate.signer.issue(
            TokenClaims(
                "rt", self.platform, claims.account_id, claims.username,
                now + config.refresh_token_seconds,
            )
        )  # fmt: skip
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "bearer",
            "expires_in": config.access_token_seconds,
            "refresh_token": refresh,
            "refresh_expires_in": config.refresh_token_seconds,
            "scope": "publish,profile",
            "user_id": claims.account_id,
        }
        if self.platform == "clipapp":
            answer["open_id"] = claims.account_id
        return answer
