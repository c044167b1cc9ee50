"""The sandbox network in process: the OAuth-like flow, switches, photoapp containers,
clipapp posts, the other platforms' posts, the published list and the state file."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import falcon.testing
import pytest

from sandbox_net.app import Sandbox, create_sandbox
from sandbox_net.config import SandboxSettings
from sandbox_net.tokens import TokenClaims, TokenSigner

REDIRECT = "http://127.0.0.1:9/connect/callback"


def connect(
    client: falcon.testing.TestClient, platform: str, username: str, **form: str
) -> dict[str, Any]:
    """Authorize + code exchange; the token answer."""
    answer = post_form(
        client,
        f"/{platform}/oauth/authorize",
        {"redirect_uri": REDIRECT, "state": "s1", "username": username, "action": "allow"} | form,
    )
    assert answer.status_code == 302, answer.text
    query = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
    assert query["state"] == "s1"
    tokens = post_form(
        client,
        f"/{platform}/oauth/token",
        {
            "grant_type": "authorization_code",
            "code": query["code"],
            "redirect_uri": REDIRECT,
        },
    )
    assert tokens.status_code == 200, tokens.text
    body: dict[str, Any] = tokens.json
    return body


def post_form(
    client: falcon.testing.TestClient, path: str, form: dict[str, str]
) -> falcon.testing.Result:
    """An HTML form submission (what a browser sends)."""
    return client.simulate_post(
        path,
        body=urlencode(form),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )


def refresh(
    client: falcon.testing.TestClient, platform: str, refresh_token: str
) -> falcon.testing.Result:
    """The refresh grant of `platform`'s token endpoint."""
    return post_form(
        client,
        f"/{platform}/oauth/token",
        {"grant_type": "refresh_token", "refresh_token": refresh_token},
    )


def bearer(tokens: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens['access_token']}"}


def switch(client: falcon.testing.TestClient, **body: Any) -> None:
    answer = client.simulate_put("/_sandbox/switches", json=body)
    assert answer.status_code == 200, answer.text


def test_oauth_flow(client: falcon.testing.TestClient) -> None:
    page = client.simulate_get(
        "/photoapp/oauth/authorize", params={"redirect_uri": REDIRECT, "state": "x"}
    )
    assert page.status_code == 200 and "<form" in page.text and "linknet" in page.text
    assert (
        client.simulate_get(
            "/photoapp/oauth/authorize", params={"redirect_uri": "javascript:alert(1)"}
        ).status_code
        == 400
    )
    bad = post_form(
        client,
        "/photoapp/oauth/authorize",
        {"redirect_uri": REDIRECT, "username": "no spaces!", "action": "allow"},
    )
    assert bad.status_code == 400 and "valid username" in bad.text
    denied = post_form(
        client,
        "/photoapp/oauth/authorize",
        {"redirect_uri": REDIRECT, "state": "s", "action": "deny"},
    )
    assert "error=access_denied" in denied.headers["location"]
    tokens = connect(client, "photoapp", "Alice", display_name="Alice A")
    assert tokens["token_type"] == "bearer" and tokens["expires_in"] == 3600
    me = client.simulate_get("/photoapp/v1/me", headers=bearer(tokens)).json
    assert (me["username"], me["name"], me["id"]) == ("alice", "Alice A", tokens["user_id"])
    refreshed = refresh(client, "photoapp", tokens["refresh_token"]).json
    assert refreshed["access_token"] != tokens["access_token"]
    assert client.simulate_get("/photoapp/v1/me", headers=bearer(refreshed)).status_code == 200
    # A token of another platform, an access token used to refresh, garbage: all refused.
    assert client.simulate_get("/clipapp/v2/user/info", headers=bearer(tokens)).status_code == 401
    wrong = refresh(client, "photoapp", tokens["access_token"])
    assert (wrong.status_code, wrong.json["error"]) == (400, "invalid_grant")
    garbage = client.simulate_get("/photoapp/v1/me", headers={"Authorization": "Bearer x.y.z"})
    assert (garbage.status_code, garbage.json["error"]["code"]) == (401, "invalid_token")


def test_codes_are_single_use_and_tokens_expire(
    client: falcon.testing.TestClient, sandbox: Sandbox
) -> None:
    answer = post_form(
        client,
        "/pinboard/oauth/authorize",
        {"redirect_uri": REDIRECT, "username": "pam", "action": "allow"},
    )
    code = dict(parse_qsl(urlsplit(answer.headers["location"]).query))["code"]
    params = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    assert post_form(client, "/pinboard/oauth/token", params).status_code == 200
    again = post_form(client, "/pinboard/oauth/token", params)
    assert (again.status_code, again.json["error"]) == (400, "invalid_grant")
    signer = TokenSigner("storypost-sandbox-development-secret")
    expired = signer.issue(TokenClaims("at", "pinboard", "1", "pam", time.time() - 1))
    answer = client.simulate_get("/pinboard/v1/me", headers={"Authorization": f"Bearer {expired}"})
    assert (answer.status_code, answer.json["error"]["code"]) == (401, "token_expired")


def test_switches(client: falcon.testing.TestClient) -> None:
    alice = connect(client, "linknet", "alice")
    bob = connect(client, "linknet", "bob")
    switch(client, platform="linknet", mode="fail", message="page unpublished", status=422)
    failed = client.simulate_get("/linknet/v1/me", headers=bearer(alice))
    assert failed.status_code == 422
    assert failed.json["error"] == {
        "code": "rejected",
        "message": "page unpublished",
        "is_transient": False,
    }
    # An account-level "ok" overrides the platform's switch.
    switch(client, platform="linknet", account="bob", mode="ok")
    assert client.simulate_get("/linknet/v1/me", headers=bearer(bob)).status_code == 200
    switch(client, platform="linknet", mode="offline")
    assert client.simulate_get("/linknet/v1/me", headers=bearer(alice)).status_code == 503
    switch(client, platform="linknet", mode="rate-limited", retryAfterSeconds=7)
    limited = client.simulate_get("/linknet/v1/me", headers=bearer(alice))
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "7")
    switch(client, platform="linknet", mode="token-expired")
    assert client.simulate_get("/linknet/v1/me", headers=bearer(alice)).status_code == 401
    refused = refresh(client, "linknet", alice["refresh_token"])
    assert (refused.status_code, refused.json["error"]) == (400, "invalid_grant")
    switch(client, platform="linknet", mode="slow", seconds=0.3)
    started = time.monotonic()
    assert client.simulate_get("/linknet/v1/me", headers=bearer(alice)).status_code == 200
    assert time.monotonic() - started >= 0.3
    listed = client.simulate_get("/_sandbox/switches").json["switches"]
    assert {(s["account"] is None, s["mode"]) for s in listed} == {(True, "slow"), (False, "ok")}
    assert client.simulate_delete(
        "/_sandbox/switches", params={"platform": "linknet", "account": "bob"}
    ).json == {"removed": 1}
    switch(client, platform="linknet", mode="ok")
    assert client.simulate_get("/_sandbox/switches").json["switches"] == []
    assert (
        client.simulate_put(
            "/_sandbox/switches", json={"platform": "linknet", "mode": "sideways"}
        ).status_code
        == 400
    )
    assert (
        client.simulate_put(
            "/_sandbox/switches", json={"platform": "myspace", "mode": "ok"}
        ).status_code
        == 400
    )


def wait_for_status(
    client: falcon.testing.TestClient, container: str, headers: dict[str, str], wanted: str
) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while True:
        body: dict[str, Any] = client.simulate_get(
            f"/photoapp/v1/containers/{container}", headers=headers
        ).json
        if body["status_code"] == wanted or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_photoapp_container_publishes_once(
    client: falcon.testing.TestClient, sandbox: Sandbox
) -> None:
    tokens = connect(client, "photoapp", "storyteller", linknet_destinations="7:Shop:page")
    headers, user = bearer(tokens), tokens["user_id"]
    assert client.simulate_get("/photoapp/v1/me/linknet_destinations", headers=headers).json == {
        "data": [{"id": "7", "name": "Shop", "type": "page"}]
    }
    create = f"/photoapp/v1/users/{user}/media"
    body = {
        "media_type": "STORIES",
        "image_url": "http://cdn.test/a.jpg",
        "stickers": [{"type": "mention", "username": "bob", "x": 0.5, "y": 0.4}],
        "ai_generated": True,
        "share_to_linknet": True,
        "linknet_destination_id": "7",
    }
    container = client.simulate_post(create, json=body, headers=headers).json["id"]
    assert wait_for_status(client, container, headers, "FINISHED")["status_code"] == "FINISHED"
    publish = f"/photoapp/v1/users/{user}/media_publish"
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda _: client.simulate_post(
                    publish, json={"creation_id": container}, headers=headers
                ).json["id"],
                range(8),
            )
        )
    assert len(set(answers)) == 1
    status = client.simulate_get(f"/photoapp/v1/containers/{container}", headers=headers).json
    assert (status["status_code"], status["media_id"]) == ("PUBLISHED", answers[0])
    items = client.simulate_get(
        "/_sandbox/published", params={"platform": "photoapp", "account": "storyteller"}
    ).json["published"]
    assert len(items) == 1
    assert items[0]["request"] == body and items[0]["kind"] == "story"
    assert items[0]["linknetDestination"] == {"id": "7", "name": "Shop", "type": "page"}
    media = client.simulate_get(f"/photoapp/v1/media/{answers[0]}", headers=headers).json
    assert media["media_product_type"] == "STORY" and media["permalink"].endswith(answers[0])
    # Refusals.
    for wrong, message in (
        ({"media_type": "REELS", "image_url": "http://cdn.test/a.jpg"}, "reel needs video_url"),
        ({"media_type": "STORIES"}, "exactly one"),
        (
            {"media_type": "STORIES", "image_url": "http://x/a", "share_to_linknet": True,
             "linknet_destination_id": "8"},
            "not linked",
        ),
    ):  # fmt: skip
        answer = client.simulate_post(create, json=wrong, headers=headers)
        assert answer.status_code == 400 and message in answer.json["error"]["message"]
    other = connect(client, "photoapp", "someone")
    forbidden = client.simulate_post(create, json=body, headers=bearer(other))
    assert forbidden.status_code == 403


def test_photoapp_not_ready_and_the_publishing_limit(
    client: falcon.testing.TestClient,
) -> None:
    assert (
        client.simulate_put(
            "/_sandbox/config", json={"videoProcessingSeconds": 30, "photoappPublishLimit": 2}
        ).json["photoappPublishLimit"]
        == 2
    )
    tokens = connect(client, "photoapp", "busy")
    headers, user = bearer(tokens), tokens["user_id"]
    video = client.simulate_post(
        f"/photoapp/v1/users/{user}/media",
        json={"media_type": "REELS", "video_url": "http://cdn.test/v.mp4", "caption": "hi"},
        headers=headers,
    ).json["id"]
    not_ready = client.simulate_post(
        f"/photoapp/v1/users/{user}/media_publish", json={"creation_id": video}, headers=headers
    )
    assert (not_ready.status_code, not_ready.json["error"]["code"]) == (400, "not_ready")
    published = []
    for _ in range(3):
        container = client.simulate_post(
            f"/photoapp/v1/users/{user}/media",
            json={"media_type": "STORIES", "image_url": "http://cdn.test/a.jpg"},
            headers=headers,
        ).json["id"]
        wait_for_status(client, container, headers, "FINISHED")
        published.append(
            client.simulate_post(
                f"/photoapp/v1/users/{user}/media_publish",
                json={"creation_id": container},
                headers=headers,
            )
        )
    assert [a.status_code for a in published] == [200, 200, 400]
    assert published[2].json["error"]["code"] == "publish_limit_reached"
    usage = client.simulate_get(
        f"/photoapp/v1/users/{user}/content_publishing_limit", headers=headers
    ).json
    assert usage["data"][0]["quota_usage"] == 2
    assert client.simulate_put("/_sandbox/config", json={"nope": 1}).status_code == 400


def test_photoapp_user_lookup(client: falcon.testing.TestClient) -> None:
    headers = bearer(connect(client, "photoapp", "looker"))
    found = client.simulate_get(
        "/photoapp/v1/lookup", params={"username": "@NatGeo"}, headers=headers
    )
    assert found.json["username"] == "natgeo" and found.json["id"].isdigit()
    missing = client.simulate_get(
        "/photoapp/v1/lookup", params={"username": "unknown_x"}, headers=headers
    )
    assert (missing.status_code, missing.json["error"]["code"]) == (404, "not_found")


def test_other_platforms_publish_once_per_idempotency_key(
    client: falcon.testing.TestClient,
) -> None:
    headers = bearer(connect(client, "microblog", "blogger"))
    body = {"media_url": "http://cdn.test/a.jpg", "media_type": "image", "text": "hello",
            "post_type": "IMAGE_POST", "options": {"altText": "a cat"}}  # fmt: skip
    first = client.simulate_post(
        "/microblog/v1/posts", json=body, headers={**headers, "Idempotency-Key": "post-1"}
    )
    again = client.simulate_post(
        "/microblog/v1/posts", json=body, headers={**headers, "Idempotency-Key": "post-1"}
    )
    plain = client.simulate_post("/microblog/v1/posts", json=body, headers=headers)
    assert (first.status_code, again.status_code, plain.status_code) == (201, 200, 201)
    assert first.json["id"] == again.json["id"] != plain.json["id"]
    assert first.json["permalink"].endswith(first.json["id"])
    items = client.simulate_get(
        "/_sandbox/published", params={"platform": "microblog", "account": "blogger"}
    ).json["published"]
    assert [i["postId"] for i in items] == [first.json["id"], plain.json["id"]]
    assert items[0]["request"] == body and items[0]["kind"] == "IMAGE_POST"
    got = client.simulate_get(f"/microblog/v1/posts/{first.json['id']}", headers=headers)
    assert got.json == first.json
    bad = client.simulate_post("/microblog/v1/posts", json={"media_type": "gif"}, headers=headers)
    assert bad.status_code == 400


@pytest.fixture(scope="module")
def media_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local HTTP server with a 2-second video and an image."""
    root = tmp_path_factory.mktemp("media")
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg, "ffmpeg is needed (apt-get install ffmpeg)"
    subprocess.run(
        [ffmpeg, "-v", "error", "-f", "lavfi", "-i", "color=c=blue:s=64x112:d=2", "-c:v",
         "libx264", "-pix_fmt", "yuv420p", str(root / "clip.mp4")],
        check=True,
        timeout=60,
    )  # fmt: skip
    (root / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 64)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_clipapp_pulls_the_video_and_checks_its_duration(media_server: str) -> None:
    sandbox = create_sandbox(SandboxSettings(fetch_media=True, video_processing_seconds=0))
    client = falcon.testing.TestClient(sandbox.app)
    headers = bearer(connect(client, "clipapp", "clipper"))
    creator = client.simulate_post("/clipapp/v2/post/publish/creator_info/query", headers=headers)
    assert creator.json["error"]["code"] == "ok"
    assert creator.json["data"]["max_video_post_duration_sec"] == 600

    def post(url: str, level: str = "SELF_ONLY") -> falcon.testing.Result:
        return client.simulate_post(
            "/clipapp/v2/post/publish/video/init",
            json={
                "post_info": {"title": "t", "privacy_level": level, "disable_duet": True},
                "source_info": {"source": "PULL_FROM_URL", "video_url": url},
            },
            headers=headers,
        )

    def final(publish_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while True:
            data: dict[str, Any] = client.simulate_post(
                "/clipapp/v2/post/publish/status/fetch",
                json={"publish_id": publish_id},
                headers=headers,
            ).json["data"]
            if data["status"] != "PROCESSING_DOWNLOAD" or time.monotonic() > deadline:
                return data
            time.sleep(0.05)

    public = post(f"{media_server}/clip.mp4", "PUBLIC_TO_EVERYONE")
    assert public.status_code == 200  # every level is allowed by default
    assert post(f"{media_server}/clip.mp4", "PUBLIC").status_code == 400
    done = final(public.json["data"]["publish_id"])
    assert done["status"] == "PUBLISH_COMPLETE" and done["publicly_available_post_id"]
    item = client.simulate_get("/_sandbox/published", params={"platform": "clipapp"}).json[
        "published"
    ][0]
    assert 1.9 <= item["media"]["durationSeconds"] <= 2.1 and item["media"]["bytes"] > 0
    # The account allows only one second and only SELF_ONLY.
    patched = client.simulate_patch(
        "/_sandbox/accounts/clipapp/clipper",
        json={"maxVideoPostDurationSec": 1, "privacyLevelOptions": ["SELF_ONLY"]},
    )
    assert patched.status_code == 200
    refused = post(f"{media_server}/clip.mp4", "PUBLIC_TO_EVERYONE")
    assert refused.json["error"]["code"] == "privacy_level_option_mismatch"
    too_long = final(post(f"{media_server}/clip.mp4").json["data"]["publish_id"])
    assert (too_long["status"], too_long["fail_reason"]) == ("FAILED", "duration_check_failed")
    missing = final(post(f"{media_server}/nope.mp4").json["data"]["publish_id"])
    assert missing["status"] == "FAILED" and "404" in missing["fail_message"]
    photo = client.simulate_post(
        "/clipapp/v2/post/publish/content/init",
        json={
            "post_info": {"title": "x" * 91, "privacy_level": "SELF_ONLY"},
            "source_info": {"source": "PULL_FROM_URL", "photo_images": [f"{media_server}/pic.png"]},
            "media_type": "PHOTO",
        },
        headers=headers,
    )
    assert photo.status_code == 400  # photo titles are at most 90 characters
    sandbox.processor.close()


def test_state_survives_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    settings = SandboxSettings(data_dir=tmp_path, fetch_media=False, video_processing_seconds=60)
    first = create_sandbox(settings)
    client = falcon.testing.TestClient(first.app)
    tokens = connect(client, "photoapp", "keeper", linknet_destinations="1:P:page")
    switch(client, platform="pinboard", mode="offline")
    pending = client.simulate_post(
        f"/photoapp/v1/users/{tokens['user_id']}/media",
        json={"media_type": "REELS", "video_url": "http://cdn.test/v.mp4"},
        headers=bearer(tokens),
    ).json["id"]
    first.store.save()
    first.processor.close()
    second = create_sandbox(settings)
    again = falcon.testing.TestClient(second.app)
    # Tokens, accounts and switches survive; unfinished processing is reported as an error.
    assert again.simulate_get("/photoapp/v1/me/linknet_destinations", headers=bearer(tokens)).json[
        "data"
    ] == [{"id": "1", "name": "P", "type": "page"}]
    assert again.simulate_get("/_sandbox/switches").json["switches"][0]["mode"] == "offline"
    status = again.simulate_get(f"/photoapp/v1/containers/{pending}", headers=bearer(tokens))
    assert status.json["status_code"] == "ERROR"
    second.processor.close()
