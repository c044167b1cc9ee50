"""photoapp, shaped like a Graph API: profile, linknet destinations, user lookup, media
containers (create → status → publish), published media, the publishing limit."""

from __future__ import annotations

import time
from typing import Any

import falcon

from sandbox_net.admin import avatar_url
from sandbox_net.errors import PlatformHttpError, bad_request, not_found
from sandbox_net.gate import Gate, json_body
from sandbox_net.identity import account_id as derive_account_id
from sandbox_net.identity import normalize_username, user_exists
from sandbox_net.media import MediaInfo
from sandbox_net.processing import Processor
from sandbox_net.state import Record
from storypost_runtime.component import component

PLATFORM = "photoapp"
MEDIA_TYPES = ("STORIES", "REELS")
DAY_SECONDS = 24 * 3600.0


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


def _own(account: Record, user_id: str) -> None:
    if user_id != account["id"]:
        raise PlatformHttpError(403, "forbidden", "the token does not belong to this user")


@component
class Me:
    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        resp.media = {
            "id": account["id"],
            "username": account["username"],
            "name": account["displayName"],
            "account_type": "BUSINESS",
            "profile_picture_url": avatar_url(req, PLATFORM, account["id"]),
        }


@component
class LinknetDestinations:
    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        resp.media = {"data": [dict(d) for d in account.get("linknetDestinations", [])]}


@component
class UserLookup:
    """GET ?username=: the public profile of any user (used to resolve mention stickers)."""

    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self.gate.enter(req, PLATFORM)
        wanted = req.get_param("username") or ""
        username = normalize_username(wanted)
        if username is None or not user_exists(username):
            raise not_found(f"no user named {wanted!r}")
        resp.media = {"id": derive_account_id(PLATFORM, username), "username": username}


@component
class MediaContainers:
    """POST /users/{user_id}/media: a story or reel container from an image or video URL."""

    gate: Gate
    processor: Processor

    def on_post(self, req: falcon.Request, resp: falcon.Response, user_id: str) -> None:
        account = self.gate.enter(req, PLATFORM)
        _own(account, user_id)
        body = json_body(req)
        media_type = body.get("media_type")
        if media_type not in MEDIA_TYPES:
            raise bad_request("media_type must be STORIES or REELS")
        urls = [k for k in ("image_url", "video_url") if body.get(k)]
        if len(urls) != 1:
            raise bad_request("give exactly one of image_url and video_url")
        if media_type == "REELS" and urls[0] != "video_url":
            raise bad_request("a reel needs video_url")
        if not isinstance(body[urls[0]], str):
            raise bad_request(f"{urls[0]} must be a string")
        caption = body.get("caption")
        if caption is not None and (not isinstance(caption, str) or len(caption) > 2200):
            raise bad_request("caption must be a string of at most 2200 characters")
        stickers = body.get("stickers")
        if stickers is not None and not (
            isinstance(stickers, list) and all(isinstance(s, dict) for s in stickers)
        ):
            raise bad_request("stickers must be an array of objects")
        destination = self._linknet_destination(account, body)
        container_id = str(17_900_000_000_000_000 + self.gate.store.next_number())
        video = urls[0] == "video_url"
        record: Record = {
            "id": container_id,
            "accountId": account["id"],
            "username": account["username"],
            "mediaType": media_type,
            "media": "video" if video else "image",
            "request": body,
            "linknetDestination": destination,
            "createdAt": time.time(),
            "statusCode": "IN_PROGRESS",
            "status": "processing",
        }
        with self.gate.store.lock:
            self.gate.store.containers[container_id] = record
            self.gate.store.touch()

        def finish(info: MediaInfo) -> None:
            record["mediaInfo"] = info.to_json()
            if info.error:
                record["statusCode"], record["status"] = "ERROR", info.error
            elif record["statusCode"] == "IN_PROGRESS":
                record["statusCode"], record["status"] = "FINISHED", "ready to publish"

        self.processor.submit(body[urls[0]], video=video, finish=finish)
        resp.media = {"id": container_id}

    @staticmethod
    def _linknet_destination(account: Record, body: dict[str, Any]) -> Record | None:
        if not body.get("share_to_linknet"):
            return None
        linked = account.get("linknetDestinations") or []
        wanted = body.get("linknet_destination_id")
        if wanted is None:
            if not linked:
                raise bad_request("the account has no linknet destination to share to")
            return dict(linked[0])
        for destination in linked:
            if destination["id"] == str(wanted):
                return dict(destination)
        raise bad_request(f"linknet destination {wanted} is not linked to this account")


def container_status(record: Record, ttl_seconds: float) -> str:
    if record.get("mediaId"):
        return "PUBLISHED"
    if record["statusCode"] in ("IN_PROGRESS", "FINISHED") and (
        time.time() - record["createdAt"] > ttl_seconds
    ):
        return "EXPIRED"
    return str(record["statusCode"])


@component
class Container:
    """GET /containers/{id}: status_code IN_PROGRESS, FINISHED, ERROR, EXPIRED or PUBLISHED."""

    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response, container_id: str) -> None:
        account = self.gate.enter(req, PLATFORM)
        store = self.gate.store
        with store.lock:
            record = store.containers.get(container_id)
            if record is None or record["accountId"] != account["id"]:
                raise not_found(f"no media container {container_id}")
            status = container_status(record, store.config.container_ttl_seconds)
            answer: Record = {"id": container_id, "status_code": status, "status": record["status"]}
            if record.get("mediaId"):
                answer["media_id"] = record["mediaId"]
        resp.media = answer


@component
class MediaPublish:
    """POST /users/{user_id}/media_publish {creation_id}: publishes once; a repeat answers the
    same media id."""

    gate: Gate

    def on_post(self, req: falcon.Request, resp: falcon.Response, user_id: str) -> None:
        account = self.gate.enter(req, PLATFORM)
        _own(account, user_id)
        body = json_body(req)
        creation_id = str(body.get("creation_id") or "")
        store = self.gate.store
        with store.lock:
            record = store.containers.get(creation_id)
            if record is None or record["accountId"] != account["id"]:
                raise not_found(f"no media container {creation_id}")
            if record.get("mediaId"):
                resp.media = {"id": record["mediaId"]}
                return
            status = container_status(record, store.config.container_ttl_seconds)
            if status == "IN_PROGRESS":
                raise PlatformHttpError(400, "not_ready", "the media is not ready to be published")
            if status == "ERROR":
                raise PlatformHttpError(400, "container_error", record["status"])
            if status == "EXPIRED":
                raise PlatformHttpError(400, "container_expired", "the media container expired")
            self._check_limit(account["id"])
            media_id = str(18_000_000_000_000_000 + store.next_number())
            now = time.time()
            record["mediaId"] = media_id
            record["status"] = "published"
            product = "STORY" if record["mediaType"] == "STORIES" else "REELS"
            permalink = f"{req.prefix}/_sandbox/p/{PLATFORM}/{media_id}"
            store.published.append(
                {
                    "platform": PLATFORM,
                    "accountId": account["id"],
                    "username": account["username"],
                    "kind": "story" if product == "STORY" else "reel",
                    "postId": media_id,
                    "containerId": creation_id,
                    "permalink": permalink,
                    "publishedAt": _iso(now),
                    "publishedAtEpoch": now,
                    "media": record.get("mediaInfo"),
                    "linknetDestination": record.get("linknetDestination"),
                    "request": record["request"],
                    "publishRequest": body,
                }
            )
            store.touch()
        resp.media = {"id": media_id}

    def _check_limit(self, account_id: str) -> None:
        store = self.gate.store
        since = time.time() - DAY_SECONDS
        used = sum(
            1
            for item in store.published
            if item["platform"] == PLATFORM
            and item["accountId"] == account_id
            and item["publishedAtEpoch"] > since
        )
        if used >= store.config.photoapp_publish_limit:
            raise PlatformHttpError(
                400,
                "publish_limit_reached",
                f"the account reached its limit of {store.config.photoapp_publish_limit} posts "
                "in 24 hours; try again later",
            )


@component
class PublishedMedia:
    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response, media_id: str) -> None:
        account = self.gate.enter(req, PLATFORM)
        with self.gate.store.lock:
            for item in self.gate.store.published:
                if item["platform"] == PLATFORM and item["postId"] == media_id:
                    break
            else:
                raise not_found(f"no media {media_id}")
        if item["accountId"] != account["id"]:
            raise not_found(f"no media {media_id}")
        resp.media = {
            "id": media_id,
            "media_product_type": "STORY" if item["kind"] == "story" else "REELS",
            "permalink": item["permalink"],
            "timestamp": item["publishedAt"],
            "username": item["username"],
        }


@component
class PublishingLimit:
    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response, user_id: str) -> None:
        account = self.gate.enter(req, PLATFORM)
        _own(account, user_id)
        store = self.gate.store
        since = time.time() - DAY_SECONDS
        with store.lock:
            used = sum(
                1
                for item in store.published
                if item["platform"] == PLATFORM
                and item["accountId"] == account["id"]
                and item["publishedAtEpoch"] > since
            )
        resp.media = {
            "data": [
                {
                    "quota_usage": used,
                    "config": {
                        "quota_total": store.config.photoapp_publish_limit,
                        "quota_duration": int(DAY_SECONDS),
                    },
                }
            ]
        }


def add_routes(app: falcon.App, gate: Gate, processor: Processor) -> None:
    base = f"/{PLATFORM}/v1"
    app.add_route(f"{base}/me", Me(gate))
    app.add_route(f"{base}/me/linknet_destinations", LinknetDestinations(gate))
    app.add_route(f"{base}/lookup", UserLookup(gate))
    app.add_route(f"{base}/users/{{user_id}}/media", MediaContainers(gate, processor))
    app.add_route(f"{base}/users/{{user_id}}/media_publish", MediaPublish(gate))
    app.add_route(f"{base}/users/{{user_id}}/content_publishing_limit", PublishingLimit(gate))
    app.add_route(f"{base}/containers/{{container_id}}", Container(gate))
    app.add_route(f"{base}/media/{{media_id}}", PublishedMedia(gate))
