"""The edge's HTTP server (edge/serve.py): what the app may rely on whoever sends the bytes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import falcon
import httpx
import pytest

from edge.body import read_json_object
from edge.config import EdgeSettings
from edge.errors import ApiError
from tests.support.edge_server import serving

LIMIT = 4096


class Echo:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        try:
            body = read_json_object(req, LIMIT)
        except ApiError as error:
            resp.status = error.status
            resp.media = error.body
            return
        resp.media = {"length": req.content_length, "body": body}


@pytest.fixture
def url() -> Iterator[str]:
    app = falcon.App()
    app.add_route("/echo", Echo())
    # Few threads: a connection that holds one shows at once.
    settings = EdgeSettings(edge_port=0, edge_threads=2, max_body_bytes=LIMIT)
    for base in serving(app, settings):
        yield f"{base}/echo"


def chunked(*parts: bytes) -> Iterator[bytes]:
    yield from parts  # httpx sends an iterator with Transfer-Encoding: chunked


def test_a_chunked_body_reaches_the_app_whole_with_its_length(url: str) -> None:
    answer = httpx.post(
        url, content=chunked(b'{"a":', b" 1", b"}"), headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"length": 8, "body": {"a": 1}}


def test_a_chunked_body_over_the_limit_gets_the_apps_413(url: str) -> None:
    big = b'{"a": "' + b"x" * LIMIT + b'"}'
    answer = httpx.post(
        url,
        content=chunked(big[:1000], big[1000:]),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 413
    assert answer.json() == {"errorMessage": f"request body too large: at most {LIMIT} bytes"}


def test_connections_that_send_nothing_hold_no_thread(url: str) -> None:
    address: Any = httpx.URL(url)
    silent = [socket.create_connection((address.host, address.port)) for _ in range(10)]
    try:
        answer = httpx.post(url, json={"b": 2}, timeout=5)
        assert answer.status_code == 200, answer.text
    finally:
        for connection in silent:
            connection.close()
