"""The sandbox's own endpoints (`/_sandbox/…`): switches, published posts, accounts, run-time
config, sample media, avatars and permalink pages. No authentication: loopback only."""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

import falcon

from sandbox_net.errors import PlatformHttpError, bad_request, not_found
from sandbox_net.gate import json_body
from sandbox_net.holds import Holds
from sandbox_net.identity import PLATFORMS
from sandbox_net.oauth import parse_destinations
from sandbox_net.state import Record, Store
from sandbox_net.switches import MODES, Switch, normalize_endpoint
from storypost_runtime.component import component

# A 1x1 PNG: a valid image any platform accepts (GET /_sandbox/media/sample.png).
SAMPLE_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)
ACCOUNT_FIELDS = {
    "displayName",
    "linknetDestinations",
    "privacyLevelOptions",
    "commentDisabled",
    "duetDisabled",
    "stitchDisabled",
    "maxVideoPostDurationSec",
}


def _platform(value: Any) -> str:
    if value not in PLATFORMS:
        raise bad_request("platform must be one of " + ", ".join(PLATFORMS))
    return str(value)


class Health:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


@component
class Switches:
    """GET lists, PUT sets one (optionally for one `endpoint` only), DELETE removes (all;
    ?platform=: a platform's and its accounts'; ?platform=&account=: one account's)."""

    store: Store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        with self.store.lock:
            resp.media = {"switches": [s.to_json() for s in self.store.switches.values()]}

    def on_put(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = json_body(req)
        platform = _platform(body.get("platform"))
        mode = body.get("mode")
        if mode not in MODES:
            raise bad_request("mode must be one of " + ", ".join(MODES))
        account = body.get("account")
        account_id = self.store.resolve_account_id(platform, str(account)) if account else None
        try:
            endpoint = normalize_endpoint(body.get("endpoint"))
        except ValueError as error:
            raise bad_request(str(error)) from None
        try:
            switch = Switch(
                platform=platform,
                account_id=account_id,
                mode=mode,
                message=str(body.get("message") or "the platform rejected the request"),
                status=int(body.get("status") or 400),
                seconds=float(body.get("seconds") or 0.0),
                retry_after_seconds=int(body.get("retryAfterSeconds") or 60),
                endpoint=endpoint,
                times=None if body.get("times") is None else int(body["times"]),
            )
        except (TypeError, ValueError):
            raise bad_request(
                "status, seconds, retryAfterSeconds and times must be numbers"
            ) from None
        if switch.times is not None and switch.times < 1:
            raise bad_request("times must be at least 1 (omit it: until removed)")
        if not 400 <= switch.status <= 599:
            raise bad_request("status must be an HTTP error status (400 to 599)")
        if not 0 <= switch.seconds <= 600:
            raise bad_request("seconds must be 0 to 600")
        self.store.set_switch(switch)
        resp.media = switch.to_json()

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        platform = req.get_param("platform")
        account = req.get_param("account")
        if account and not platform:
            raise bad_request("an account switch is removed with platform and account")
        account_id = self.store.resolve_account_id(str(platform), account) if account else None
        removed = self.store.reset_switches(_platform(platform) if platform else None, account_id)
        resp.media = {"removed": removed}


@component
class Held:
    """GET ?platform=&account=: the calls performed whose answers a `late-answer` switch
    holds back right now; DELETE (same filters): answers them at once."""

    store: Store
    holds: Holds

    def _filters(self, req: falcon.Request) -> tuple[str | None, str | None]:
        platform = req.get_param("platform")
        account = req.get_param("account")
        if account and not platform:
            raise bad_request("an account is given with its platform")
        name = _platform(platform) if platform else None
        account_id = self.store.resolve_account_id(str(name), account) if account else None
        return name, account_id

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"held": [h.to_json() for h in self.holds.listed(*self._filters(req))]}

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"released": self.holds.release(*self._filters(req))}


@component
class Published:
    """GET ?platform=&account=: every published post with every field received."""

    store: Store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        platform = req.get_param("platform")
        account = req.get_param("account")
        if platform:
            _platform(platform)
        with self.store.lock:
            wanted = (
                self.store.resolve_account_id(platform, account) if platform and account else None
            )
            items = [
                {k: v for k, v in item.items() if k != "publishedAtEpoch"}
                for item in self.store.published
                if (not platform or item["platform"] == platform)
                and (
                    not account
                    or item["accountId"] in (wanted, account)
                    or item["username"] == account.lower().removeprefix("@")
                )
            ]
        resp.media = {"published": items}


@component
class Accounts:
    store: Store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        platform = req.get_param("platform")
        with self.store.lock:
            resp.media = {
                "accounts": [
                    _account_json(a)
                    for a in self.store.accounts.values()
                    if not platform or a["platform"] == platform
                ]
            }


@component
class Account:
    """GET one account; PATCH its display name, linknet destinations or creator settings."""

    store: Store

    def _find(self, platform: str, account: str) -> Record:
        account_id = self.store.resolve_account_id(_platform(platform), account)
        found = self.store.account(platform, account_id)
        if found is None:
            raise not_found(f"no {platform} account {account}")
        return found

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, platform: str, account: str
    ) -> None:
        with self.store.lock:
            resp.media = _account_json(self._find(platform, account))

    def on_patch(
        self, req: falcon.Request, resp: falcon.Response, platform: str, account: str
    ) -> None:
        body = json_body(req)
        unknown = sorted(set(body) - ACCOUNT_FIELDS)
        if unknown:
            raise bad_request("unknown fields: " + ", ".join(unknown))
        with self.store.lock:
            record = self._find(platform, account)
            if "displayName" in body:
                record["displayName"] = str(body["displayName"])
            if "linknetDestinations" in body:
                record["linknetDestinations"] = _destinations(body["linknetDestinations"])
            creator = record.get("creator")
            for key, target in (
                ("privacyLevelOptions", "privacy_level_options"),
                ("commentDisabled", "comment_disabled"),
                ("duetDisabled", "duet_disabled"),
                ("stitchDisabled", "stitch_disabled"),
                ("maxVideoPostDurationSec", "max_video_post_duration_sec"),
            ):
                if key in body:
                    if creator is None:
                        raise bad_request(f"{key} applies to clipapp accounts only")
                    creator[target] = body[key]
            self.store.touch()
            resp.media = _account_json(record)


def _destinations(value: Any) -> list[Record]:
    if isinstance(value, str):
        try:
            return parse_destinations(value)
        except ValueError as error:
            raise bad_request(str(error)) from None
    if not isinstance(value, list):
        raise bad_request("linknetDestinations must be an array of {id, name, type}")
    result = []
    for item in value:
        if not (
            isinstance(item, dict)
            and all(isinstance(item.get(k), str) for k in ("id", "name", "type"))
        ):
            raise bad_request("each linknet destination needs string id, name and type")
        result.append({"id": item["id"], "name": item["name"], "type": item["type"]})
    return result


def _account_json(account: Record) -> dict[str, Any]:
    data = {
        "platform": account["platform"],
        "id": account["id"],
        "username": account["username"],
        "displayName": account["displayName"],
    }
    if account["platform"] == "photoapp":
        data["linknetDestinations"] = account.get("linknetDestinations", [])
    if "creator" in account:
        data["creator"] = account["creator"]
    return data


@component
class Config:
    store: Store

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.store.config.to_json()

    def on_put(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = json_body(req)
        with self.store.lock:
            known = self.store.config.to_json()
            unknown = [k for k in body if k not in known]
            if unknown:
                raise bad_request("unknown settings: " + ", ".join(unknown))
            try:
                self.store.config.update(body)
            except (TypeError, ValueError):
                raise bad_request("each setting must be a number (fetchMedia: a boolean)") from None
            self.store.touch()
            resp.media = self.store.config.to_json()


class SampleMedia:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = "image/png"
        resp.data = SAMPLE_PNG


def avatar_url(req: falcon.Request, platform: str, account_id: str) -> str:
    """Where `Avatar` serves the picture of a platform's account."""
    return f"{req.prefix}/_sandbox/avatars/{platform}/{account_id}.svg"


class Avatar:
    def on_get(self, req: falcon.Request, resp: falcon.Response, platform: str, name: str) -> None:
        hue = int(hashlib.sha256(f"{platform}{name}".encode()).hexdigest()[:4], 16) % 360
        resp.content_type = "image/svg+xml"
        resp.text = (
            "<svg xmlns='http://www.w3.org/2000/svg' width='96' height='96'>"
            f"<circle cx='48' cy='48' r='48' fill='hsl({hue},60%,55%)'/></svg>"
        )


@component
class Permalink:
    """The page a permalink opens: what was published."""

    store: Store

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, platform: str, post_id: str
    ) -> None:
        with self.store.lock:
            found = next(
                (
                    p
                    for p in self.store.published
                    if (p["platform"], p["postId"]) == (platform, post_id)
                ),
                None,
            )
        if found is None:
            raise PlatformHttpError(404, "not_found", f"no {platform} post {post_id}")
        resp.content_type = falcon.MEDIA_HTML
        resp.text = (
            f"<!doctype html><title>{html.escape(platform)} post {html.escape(post_id)}</title>"
            f"<h1>@{html.escape(found['username'])} on {html.escape(platform)}</h1>"
            f"<p>Published {html.escape(found['publishedAt'])} ({html.escape(found['kind'])}).</p>"
        )


def add_routes(app: falcon.App, store: Store, holds: Holds) -> None:
    app.add_route("/healthz", Health())
    app.add_route("/_sandbox/switches", Switches(store))
    app.add_route("/_sandbox/held", Held(store, holds))
    app.add_route("/_sandbox/published", Published(store))
    app.add_route("/_sandbox/accounts", Accounts(store))
    app.add_route("/_sandbox/accounts/{platform}/{account}", Account(store))
    app.add_route("/_sandbox/config", Config(store))
    app.add_route("/_sandbox/media/sample.png", SampleMedia())
    app.add_route("/_sandbox/avatars/{platform}/{name}", Avatar())
    app.add_route("/_sandbox/p/{platform}/{post_id}", Permalink(store))
