"""The other platforms (video channel, linknet, professional network, pin board, ephemeral
chat, short-text, microblog): a profile and one publish endpoint each."""

from __future__ import annotations

import time
from typing import Any

import falcon

from sandbox_net.admin import avatar_url
from sandbox_net.errors import PlatformHttpError, bad_request, not_found
from sandbox_net.gate import Gate, json_body
from sandbox_net.identity import SOCIAL_PLATFORMS
from sandbox_net.media import MediaInfo, fetch_media
from sandbox_net.state import Record
from storypost_runtime.component import component

TEXT_MAX = 63_206


@component
class Me:
    gate: Gate
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, self.platform)
        resp.media = {
            "id": account["id"],
            "username": account["username"],
            "name": account["displayName"],
            "profile_picture_url": avatar_url(req, self.platform, account["id"]),
        }


@component
class Posts:
    """POST: publishes at once and answers {id, permalink}; an Idempotency-Key makes a
    repeat answer the same post. GET ?idempotency_key=: the post made with that key, if any
    (how a caller whose answer was lost finds out, without posting again)."""

    gate: Gate
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, self.platform)
        key = req.get_param("idempotency_key")
        if not key:
            raise bad_request("idempotency_key is required")
        store = self.gate.store
        with store.lock:
            known = store.idempotency.get(f"{self.platform}:{account['id']}:{key}")
            found = [self._answer(store.posts[known])] if known is not None else []
        resp.media = {"data": found}

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        account = self.gate.enter(req, self.platform)
        body = json_body(req)
        key = req.get_header("Idempotency-Key")
        store = self.gate.store
        scope = f"{self.platform}:{account['id']}:{key}"
        if key:
            with store.lock:
                known = store.idempotency.get(scope)
                if known is not None:
                    resp.status = 200
                    resp.media = self._answer(store.posts[known])
                    return
        media_type, url = self._validate(body)
        info = fetch_media(url, video=media_type == "video") if store.config.fetch_media else None
        if info is not None and info.error:
            raise PlatformHttpError(400, "media_error", info.error)
        with store.lock:
            if key and scope in store.idempotency:
                resp.media = self._answer(store.posts[store.idempotency[scope]])
                return
            post_id = str(5_100_000_000_000 + store.next_number())
            now = time.time()
            post: Record = {
                "id": post_id,
                "platform": self.platform,
                "accountId": account["id"],
                "permalink": f"{req.prefix}/_sandbox/p/{self.platform}/{post_id}",
                "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            }
            store.posts[post_id] = post
            if key:
                store.idempotency[scope] = post_id
            store.published.append(
                {
                    "platform": self.platform,
                    "accountId": account["id"],
                    "username": account["username"],
                    "kind": str(body.get("post_type") or media_type),
                    "postId": post_id,
                    "permalink": post["permalink"],
                    "publishedAt": post["createdAt"],
                    "publishedAtEpoch": now,
                    "media": (info or MediaInfo(url)).to_json(),
                    "idempotencyKey": key,
                    "request": body,
                }
            )
            store.touch()
        resp.status = 201
        resp.media = self._answer(post)

    @staticmethod
    def _validate(body: dict[str, Any]) -> tuple[str, str]:
        media_type = body.get("media_type")
        if media_type not in ("image", "video"):
            raise bad_request("media_type must be image or video")
        url = body.get("media_url")
        if not isinstance(url, str) or not url:
            raise bad_request("media_url is required")
        text = body.get("text", "")
        if not isinstance(text, str) or len(text) > TEXT_MAX:
            raise bad_request(f"text must be a string of at most {TEXT_MAX} characters")
        options = body.get("options", {})
        if not isinstance(options, dict):
            raise bad_request("options must be an object")
        return media_type, url

    @staticmethod
    def _answer(post: Record) -> dict[str, Any]:
        return {"id": post["id"], "permalink": post["permalink"], "created_at": post["createdAt"]}


@component
class Post:
    gate: Gate
    platform: str

    def on_get(self, req: falcon.Request, resp: falcon.Response, post_id: str) -> None:
        account = self.gate.enter(req, self.platform)
        with self.gate.store.lock:
            post = self.gate.store.posts.get(post_id)
        if post is None or (post["platform"], post["accountId"]) != (self.platform, account["id"]):
            raise not_found(f"no post {post_id}")
        resp.media = Posts._answer(post)


def add_routes(app: falcon.App, gate: Gate) -> None:
    for platform in SOCIAL_PLATFORMS:
        base = f"/{platform}/v1"
        app.add_route(f"{base}/me", Me(gate, platform))
        app.add_route(f"{base}/posts", Posts(gate, platform))
        app.add_route(f"{base}/posts/{{post_id}}", Post(gate, platform))
