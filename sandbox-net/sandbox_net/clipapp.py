"""clipapp, shaped like a short-video platform's content posting API: user info, creator info,
init (pull from URL, video or photo) → publish status fetch; and its display API's list of the
creator's recent public posts (the only way to find a post whose init answer was lost)."""

from __future__ import annotations

import time
import uuid
from dataclasses import KW_ONLY
from typing import Any

import falcon

from sandbox_net.admin import avatar_url
from sandbox_net.errors import PlatformHttpError, bad_request, not_found
from sandbox_net.gate import Gate, json_body
from sandbox_net.media import MediaInfo
from sandbox_net.processing import Processor
from sandbox_net.state import Record
from storypost_runtime.component import component
from storypost_runtime.vocabulary import CLIPAPP_PUBLIC

PLATFORM = "clipapp"
TITLE_MAX = 2200
PHOTO_TITLE_MAX = 90
DESCRIPTION_MAX = 4000
PUBLIC = CLIPAPP_PUBLIC
LIST_MAX = 20
LIST_FIELDS = ("id", "create_time", "title", "video_description", "share_url", "duration")


def _ok(data: dict[str, Any]) -> dict[str, Any]:
    return {"data": data, "error": {"code": "ok", "message": "", "log_id": uuid.uuid4().hex}}


@component
class UserInfo:
    gate: Gate

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        resp.media = _ok(
            {
                "user": {
                    "open_id": account["id"],
                    "union_id": f"u{account['id']}",
                    "username": account["username"],
                    "display_name": account["displayName"],
                    "avatar_url": avatar_url(req, PLATFORM, account["id"]),
                }
            }
        )


@component
class CreatorInfo:
    gate: Gate

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        creator = account["creator"]
        resp.media = _ok(
            {
                "creator_avatar_url": avatar_url(req, PLATFORM, account["id"]),
                "creator_username": account["username"],
                "creator_nickname": account["displayName"],
                **{k: (list(v) if isinstance(v, list) else v) for k, v in creator.items()},
            }
        )


@component
class Init:
    """POST video/init or content/init: starts a PULL_FROM_URL post, answers a publish_id."""

    _: KW_ONLY
    gate: Gate
    processor: Processor
    photo: bool

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        body = json_body(req)
        post_info = body.get("post_info")
        source = body.get("source_info")
        if not isinstance(post_info, dict) or not isinstance(source, dict):
            raise bad_request("post_info and source_info must be objects")
        if source.get("source") != "PULL_FROM_URL":
            raise bad_request("source_info.source must be PULL_FROM_URL")
        self._check_post_info(account, post_info)
        url = self._media_url(source)
        prefix = "p_pub_url~v2." if self.photo else "v_pub_url~v2-1."
        publish_id = prefix + str(7_300_000_000_000_000_000 + self.gate.store.next_number())
        record: Record = {
            "id": publish_id,
            "accountId": account["id"],
            "username": account["username"],
            "media": "image" if self.photo else "video",
            "request": body,
            "createdAt": time.time(),
            "status": "PROCESSING_DOWNLOAD",
        }
        with self.gate.store.lock:
            self.gate.store.clip_publishes[publish_id] = record
            self.gate.store.touch()
        store = self.gate.store
        prefix_url = req.prefix

        def finish(info: MediaInfo) -> None:
            record["mediaInfo"] = info.to_json()
            limit = account["creator"]["max_video_post_duration_sec"]
            if info.error:
                record["status"], record["failReason"] = "FAILED", "file_format_check_failed"
                record["failMessage"] = info.error
            elif not self.photo and (info.duration_seconds or 0) > limit:
                record["status"], record["failReason"] = "FAILED", "duration_check_failed"
                record["failMessage"] = f"the video is longer than {limit} seconds"
            else:
                post_id = str(7_400_000_000_000_000_000 + store.next_number())
                now = time.time()
                record["status"], record["postId"] = "PUBLISH_COMPLETE", post_id
                store.published.append(
                    {
                        "platform": PLATFORM,
                        "accountId": account["id"],
                        "username": account["username"],
                        "kind": "photo" if self.photo else "video",
                        "postId": post_id,
                        "publishId": publish_id,
                        "permalink": f"{prefix_url}/_sandbox/p/{PLATFORM}/{post_id}",
                        "publishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                        "publishedAtEpoch": now,
                        "media": info.to_json(),
                        "request": body,
                    }
                )

        self.processor.submit(url, video=not self.photo, finish=finish)
        resp.media = _ok({"publish_id": publish_id})

    def _check_post_info(self, account: Record, info: dict[str, Any]) -> None:
        creator = account["creator"]
        level = info.get("privacy_level")
        if level not in creator["privacy_level_options"]:
            raise PlatformHttpError(
                400,
                "privacy_level_option_mismatch",
                "privacy_level must be one of " + ", ".join(creator["privacy_level_options"]),
            )
        title_max = PHOTO_TITLE_MAX if self.photo else TITLE_MAX
        title = info.get("title", "")
        if not isinstance(title, str) or len(title) > title_max:
            raise bad_request(f"title must be a string of at most {title_max} characters")
        description = info.get("description", "")
        if not isinstance(description, str) or len(description) > DESCRIPTION_MAX:
            raise bad_request(f"description must be at most {DESCRIPTION_MAX} characters")

    def _media_url(self, source: dict[str, Any]) -> str:
        if not self.photo:
            url = source.get("video_url")
            if not isinstance(url, str) or not url:
                raise bad_request("source_info.video_url is required")
            return url
        images = source.get("photo_images")
        if not isinstance(images, list) or not 1 <= len(images) <= 35:
            raise bad_request("source_info.photo_images must list 1 to 35 image URLs")
        if not all(isinstance(u, str) and u for u in images):
            raise bad_request("source_info.photo_images must be URLs")
        return str(images[int(source.get("photo_cover_index") or 0) % len(images)])


@component
class StatusFetch:
    gate: Gate

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        publish_id = str(json_body(req).get("publish_id") or "")
        with self.gate.store.lock:
            record = self.gate.store.clip_publishes.get(publish_id)
            if record is None or record["accountId"] != account["id"]:
                raise not_found(f"no publish job {publish_id}")
            data: dict[str, Any] = {"status": record["status"]}
            if record["status"] == "FAILED":
                data["fail_reason"] = record["failReason"]
                data["fail_message"] = record.get("failMessage", "")
            if record.get("postId"):
                data["publicly_available_post_id"] = [record["postId"]]
            info = record.get("mediaInfo") or {}
            data["downloaded_bytes"] = info.get("bytes", 0)
        resp.media = _ok(data)


@component
class VideoList:
    """POST /video/list/?fields=…  {"cursor": ms, "max_count": n}: the creator's published
    public posts, newest first, created before `cursor` (a Unix time in milliseconds), like
    the display API's list. Posts of any other privacy level are never listed, nor posts
    still processing; there is no reference to the init that made a post."""

    gate: Gate

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, PLATFORM)
        body = json_body(req)
        fields = [f for f in (req.get_param("fields") or "").split(",") if f] or list(LIST_FIELDS)
        unknown = sorted(set(fields) - set(LIST_FIELDS))
        if unknown:
            raise bad_request("unknown fields: " + ", ".join(unknown))
        try:
            count = int(body.get("max_count") or LIST_MAX)
            cursor = float(body["cursor"]) if body.get("cursor") is not None else None
        except (TypeError, ValueError):
            raise bad_request("max_count and cursor must be numbers") from None
        if not 1 <= count <= LIST_MAX:
            raise bad_request(f"max_count must be 1 to {LIST_MAX}")
        with self.gate.store.lock:
            mine = [
                item
                for item in self.gate.store.published
                if item["platform"] == PLATFORM
                and item["accountId"] == account["id"]
                and _privacy(item) == PUBLIC
                and (cursor is None or item["publishedAtEpoch"] * 1000 < cursor)
            ]
        mine.sort(key=lambda item: item["publishedAtEpoch"], reverse=True)
        page = mine[:count]
        videos = [{k: v for k, v in _video(item).items() if k in fields} for item in page]
        next_cursor = int(page[-1]["publishedAtEpoch"] * 1000) if page else int(cursor or 0)
        resp.media = _ok(
            {"videos": videos, "cursor": next_cursor, "has_more": len(mine) > len(page)}
        )


def _privacy(item: Record) -> str:
    post_info = (item.get("request") or {}).get("post_info") or {}
    return str(post_info.get("privacy_level") or "")


def _video(item: Record) -> dict[str, Any]:
    post_info = (item.get("request") or {}).get("post_info") or {}
    title = str(post_info.get("title") or "")
    return {
        "id": item["postId"],
        "create_time": int(item["publishedAtEpoch"]),
        "title": title,
        "video_description": str(post_info.get("description") or title),
        "share_url": item["permalink"],
        "duration": round(float((item.get("media") or {}).get("durationSeconds") or 0)),
    }


def add_routes(app: falcon.App, gate: Gate, processor: Processor) -> None:
    base = f"/{PLATFORM}/v2"
    app.add_route(f"{base}/user/info", UserInfo(gate))
    app.add_route(f"{base}/post/publish/creator_info/query", CreatorInfo(gate))
    app.add_route(
        f"{base}/post/publish/video/init", Init(gate=gate, processor=processor, photo=False)
    )
    app.add_route(
        f"{base}/post/publish/content/init", Init(gate=gate, processor=processor, photo=True)
    )
    app.add_route(f"{base}/post/publish/status/fetch", StatusFetch(gate))
    app.add_route(f"{base}/video/list", VideoList(gate))
