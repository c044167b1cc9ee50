"""The sandbox network's parts the lost-answer handling relies on: per-endpoint switches, the
late-answer mode, clipapp's list of recent public posts and the look-up by Idempotency-Key."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import falcon.testing
import pytest
from pydantic import SecretStr

from sandbox_net.app import Sandbox, create_sandbox
from sandbox_net.config import SandboxSettings
from sandbox_net.tokens import TokenClaims, TokenSigner

SECRET = "lookup-tests-secret"


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    built = create_sandbox(
        SandboxSettings(fetch_media=False, image_processing_seconds=0, secret=SecretStr(SECRET))
    )
    yield built
    built.processor.close()


@pytest.fixture
def client(sandbox: Sandbox) -> falcon.testing.TestClient:
    return falcon.testing.TestClient(sandbox.app)


def bearer(sandbox: Sandbox, platform: str, username: str) -> dict[str, str]:
    account = sandbox.store.ensure_account(platform, username)
    token = TokenSigner(SECRET).issue(
        TokenClaims("at", platform, account["id"], username, time.time() + 3600)
    )
    return {"Authorization": f"Bearer {token}"}


def photo_init(title: str, privacy: str) -> dict[str, Any]:
    return {
        "post_info": {"title": title, "description": "", "privacy_level": privacy},
        "source_info": {"source": "PULL_FROM_URL", "photo_images": ["http://m.test/a.jpg"]},
        "post_mode": "DIRECT_POST",
        "media_type": "PHOTO",
    }


def answer_pins_late(client: falcon.testing.TestClient, seconds: float, **scope: Any) -> None:
    """A late-answer switch on pinboard's `posts` endpoint (`scope`: account=, times=)."""
    client.simulate_put(
        "/_sandbox/switches",
        json={
            "platform": "pinboard",
            "mode": "late-answer",
            "seconds": seconds,
            "endpoint": "posts",
            **scope,
        },
    )


def post_pin(client: falcon.testing.TestClient, headers: dict[str, str]) -> falcon.testing.Result:
    """Pins an image on pinboard (the `posts` call a late-answer switch holds up)."""
    body = {"media_type": "image", "media_url": "http://m.test/a.jpg", "post_type": "PIN"}
    return client.simulate_post("/pinboard/v1/posts", json=body, headers=headers)


def wait_published(sandbox: Sandbox, count: int) -> None:
    for _ in range(200):
        if len(sandbox.store.published) >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{len(sandbox.store.published)} published, expected {count}")


def test_an_endpoint_switch_touches_only_its_endpoint(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "clipapp", "cleo")
    body = {"platform": "clipapp", "mode": "offline", "endpoint": "/post/publish/content/init/"}
    answer = client.simulate_put("/_sandbox/switches", json=body)
    assert answer.json["endpoint"] == "post/publish/content/init"
    init = client.simulate_post(
        "/clipapp/v2/post/publish/content/init",
        json=photo_init("t", "SELF_ONLY"),
        headers=headers,
    )
    assert init.status_code == 503
    info = client.simulate_post("/clipapp/v2/post/publish/creator_info/query", headers=headers)
    assert info.status_code == 200
    bad = client.simulate_put(
        "/_sandbox/switches", json={"platform": "clipapp", "mode": "ok", "endpoint": "a b"}
    )
    assert bad.status_code == 400 and "endpoint" in bad.json["error"]["message"]
    # An account's switch for the endpoint wins over the platform's; reset removes both.
    client.simulate_put(
        "/_sandbox/switches",
        json={**body, "mode": "ok", "account": "cleo"},
    )
    assert (
        client.simulate_post(
            "/clipapp/v2/post/publish/content/init",
            json=photo_init("t", "SELF_ONLY"),
            headers=headers,
        ).status_code
        == 200
    )
    assert client.simulate_delete("/_sandbox/switches").json == {"removed": 2}


def test_late_answer_performs_first_then_answers(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "pinboard", "pia")
    answer_pins_late(client, 0.3)
    started = time.monotonic()
    answer = post_pin(client, headers)
    assert answer.status_code == 201 and time.monotonic() - started >= 0.3
    assert len(sandbox.store.published) == 1


def test_a_switch_with_times_applies_to_that_many_calls_then_removes_itself(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "pronet", "pat")
    body = {"platform": "pronet", "account": "pat", "mode": "fail", "endpoint": "me", "times": 2}
    assert client.simulate_put("/_sandbox/switches", json=body).json["times"] == 2
    codes = [client.simulate_get("/pronet/v1/me", headers=headers).status_code for _ in range(3)]
    assert codes == [400, 400, 200]
    assert client.simulate_get("/_sandbox/switches").json["switches"] == []
    # `*` stands for one segment (an id); the rest of the path must match.
    by_id = {**body, "endpoint": "posts/*", "times": 1}
    client.simulate_put("/_sandbox/switches", json=by_id)
    assert client.simulate_get("/pronet/v1/posts/123", headers=headers).status_code == 400
    zero = client.simulate_put("/_sandbox/switches", json={**body, "times": 0})
    assert zero.status_code == 400 and "times" in zero.json["error"]["message"]


def test_a_held_answer_is_listed_and_released_on_demand(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "pinboard", "pia")
    answer_pins_late(client, 60, account="pia", times=1)
    answers: list[int] = []
    caller = threading.Thread(target=lambda: answers.append(post_pin(client, headers).status_code))
    started = time.monotonic()
    caller.start()
    held: list[dict[str, Any]] = []
    while not held and time.monotonic() - started < 5:
        held = client.simulate_get(
            "/_sandbox/held", params={"platform": "pinboard", "account": "pia"}
        ).json["held"]
        time.sleep(0.01)
    # Performed (published) while its answer is held back.
    assert [(h["method"], h["path"]) for h in held] == [("POST", "/pinboard/v1/posts")]
    assert len(sandbox.store.published) == 1 and answers == []
    other = {"platform": "pinboard", "account": "someone"}
    assert client.simulate_delete("/_sandbox/held", params=other).json == {"released": 0}
    released = client.simulate_delete("/_sandbox/held", params={"platform": "pinboard"})
    assert released.json == {"released": 1}
    caller.join(5)
    assert answers == [201] and time.monotonic() - started < 30
    assert client.simulate_get("/_sandbox/held").json == {"held": []}


def test_clipapp_lists_recent_public_posts_newest_first(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "clipapp", "cleo")
    for n, privacy in enumerate(["PUBLIC_TO_EVERYONE", "SELF_ONLY", "PUBLIC_TO_EVERYONE"]):
        client.simulate_post(
            "/clipapp/v2/post/publish/content/init",
            json=photo_init(f"post {n}", privacy),
            headers=headers,
        )
        wait_published(sandbox, n + 1)
        time.sleep(0.01)
    other = bearer(sandbox, "clipapp", "otto")
    assert client.simulate_post("/clipapp/v2/video/list/", json={}, headers=other).json["data"] == {
        "videos": [],
        "cursor": 0,
        "has_more": False,
    }
    page = client.simulate_post(
        "/clipapp/v2/video/list/",
        params={"fields": "id,title,create_time,share_url"},
        json={"max_count": 1},
        headers=headers,
    ).json["data"]
    assert [v["title"] for v in page["videos"]] == ["post 2"] and page["has_more"] is True
    assert set(page["videos"][0]) == {"id", "title", "create_time", "share_url"}
    rest = client.simulate_post(
        "/clipapp/v2/video/list/", json={"cursor": page["cursor"]}, headers=headers
    ).json["data"]
    # The private post is never listed.
    assert [v["title"] for v in rest["videos"]] == ["post 0"] and rest["has_more"] is False
    assert rest["videos"][0]["share_url"] == sandbox.store.published[0]["permalink"]


def test_social_post_is_found_by_its_idempotency_key(
    sandbox: Sandbox, client: falcon.testing.TestClient
) -> None:
    headers = bearer(sandbox, "linknet", "lin")
    made = client.simulate_post(
        "/linknet/v1/posts",
        json={"media_type": "image", "media_url": "http://m.test/a.jpg"},
        headers={**headers, "Idempotency-Key": "k1"},
    )
    found = client.simulate_get(
        "/linknet/v1/posts", params={"idempotency_key": "k1"}, headers=headers
    )
    assert found.json == {"data": [made.json]}
    none = client.simulate_get(
        "/linknet/v1/posts", params={"idempotency_key": "k2"}, headers=headers
    )
    assert none.json == {"data": []}
    # Another account does not see it.
    stranger = bearer(sandbox, "linknet", "sam")
    assert client.simulate_get(
        "/linknet/v1/posts", params={"idempotency_key": "k1"}, headers=stranger
    ).json == {"data": []}
