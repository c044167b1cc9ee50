"""The client address the edge sees (sign-in limits, logs): the ingress's X-Forwarded-For when
the ingress is the trusted proxy, the socket's peer otherwise, never a caller's own header."""

from __future__ import annotations

from collections.abc import Iterator

import falcon
import httpx
import pytest

from edge.config import EdgeSettings
from tests.support.edge_server import serving


class Echo:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"address": req.remote_addr, "scheme": req.scheme}


def running(settings: EdgeSettings) -> Iterator[str]:
    app = falcon.App()
    app.add_route("/echo", Echo())
    for base in serving(app, settings):
        yield f"{base}/echo"


@pytest.fixture
def behind_ingress() -> Iterator[str]:
    yield from running(EdgeSettings(edge_port=0, edge_trusted_proxy="127.0.0.1"))


@pytest.fixture
def exposed() -> Iterator[str]:
    yield from running(EdgeSettings(edge_port=0))


def test_behind_the_trusted_ingress_the_client_is_the_forwarded_address(
    behind_ingress: str,
) -> None:
    # The ingress appends the address it saw; whatever the client sent before is not trusted.
    forwarded = {"X-Forwarded-For": "6.6.6.6, 203.0.113.7", "X-Forwarded-Proto": "https"}
    answer = httpx.get(behind_ingress, headers=forwarded).json()
    assert answer == {"address": "203.0.113.7", "scheme": "https"}
    assert httpx.get(behind_ingress).json()["address"] == "127.0.0.1"


def test_without_a_trusted_proxy_forwarded_headers_are_ignored(exposed: str) -> None:
    forwarded = {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}
    answer = httpx.get(exposed, headers=forwarded).json()
    assert answer == {"address": "127.0.0.1", "scheme": "http"}
