"""SSRF rules: which addresses and URLs the render sandbox refuses; our own blob URLs."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from aiohttp.abc import ResolveResult

from render_svc.blob_urls import BlobRef, BlobUrlMatcher, blob_url, new_key
from render_svc.netguard import Blocked, GuardedResolver, NetRules, blocked_reason
from storypost_runtime.component import component


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback address"),
        ("127.9.9.9", "loopback address"),
        ("::1", "loopback address"),
        ("::ffff:127.0.0.1", "loopback address"),
        ("10.1.2.3", "private or reserved address"),
        ("172.16.0.1", "private or reserved address"),
        ("192.168.1.1", "private or reserved address"),
        ("100.64.0.1", "private or reserved address"),
        ("fd00:ec2::254", "private or reserved address"),
        ("169.254.169.254", "link-local or metadata address"),
        ("fe80::1", "link-local or metadata address"),
        ("0.0.0.0", "unspecified address"),
        ("224.0.0.1", "multicast address"),
        ("240.0.0.1", "private or reserved address"),
        ("93.184.216.34", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
    ],
)
def test_address_classes(address: str, reason: str | None) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "file: URLs are not allowed"),
        ("ftp://example.com/x", "ftp: URLs are not allowed"),
        ("ws://example.com/x", "ws: URLs are not allowed"),
        ("http://127.0.0.1:8080/", "loopback address"),
        ("http://[::1]/", "loopback address"),
        ("http://localhost:9000/", "loopback address"),
        ("http://api.localhost/", "loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "link-local or metadata address"),
        ("http://10.0.0.5/", "private or reserved address"),
        ("https://user:pw@example.com/", "URLs with credentials are not allowed"),
    ],
)
def test_urls_the_sandbox_refuses(url: str, message: str) -> None:
    with pytest.raises(Blocked, match=message):
        NetRules().check_url(url)


def test_public_urls_and_exempt_hosts_pass() -> None:
    NetRules().check_url("https://example.com/page")
    rules = NetRules(frozenset({"127.0.0.1:8123"}))
    rules.check_url("http://127.0.0.1:8123/page")
    with pytest.raises(Blocked):
        rules.check_url("http://127.0.0.1:8124/page")


@component
class FakeResolver:
    addresses: list[str]

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.addresses
        ]

    async def close(self) -> None:
        return None


async def test_a_name_resolving_to_any_private_address_is_refused() -> None:
    resolver = GuardedResolver(NetRules())
    resolver._inner = FakeResolver(["93.184.216.34", "10.0.0.7"])  # type: ignore[assignment]
    with pytest.raises(Blocked, match=r"rebind\.example resolves to a private or reserved address"):
        await resolver.resolve("rebind.example", 80)
    resolver._inner = FakeResolver(["93.184.216.34"])  # type: ignore[assignment]
    assert [r["host"] for r in await resolver.resolve("ok.example", 80)] == ["93.184.216.34"]


async def test_exempt_hosts_resolve_to_anything() -> None:
    resolver = GuardedResolver(NetRules(frozenset({"pages.test:8080"})))
    resolver._inner = FakeResolver(["127.0.0.1"])  # type: ignore[assignment]
    assert len(await resolver.resolve("pages.test", 8080)) == 1
    with pytest.raises(Blocked):
        await resolver.resolve("pages.test", 8081)


def test_blob_urls_round_trip_and_only_ours_match() -> None:
    key = new_key()
    assert len(key) >= 22
    uuid = "6b81abc4-0825-4b6c-8c9c-a33d9d55d93e"
    url = blob_url("http://127.0.0.1:8080/o/org1/", uuid, key)
    assert url == f"http://127.0.0.1:8080/o/org1/blobs/{uuid}/{key}"
    matcher = BlobUrlMatcher("http://127.0.0.1:8080")
    assert matcher.match(url) == BlobRef("org1", uuid, key)
    assert matcher.match(url.replace(":8080", ":8081")) is None
    assert matcher.match(url.replace("http:", "https:")) is None
    assert matcher.match(f"http://127.0.0.1:8080/o/org1/blobs/{uuid}") is None
    assert matcher.match(f"http://127.0.0.1:8080/o/org1/blobs/not-a-uuid/{key}") is None


def test_blob_urls_under_a_public_path_prefix() -> None:
    matcher = BlobUrlMatcher("https://api.example.com/storypost/")
    uuid = "6b81abc4-0825-4b6c-8c9c-a33d9d55d93e"
    url = f"https://api.example.com:443/storypost/o/o1/blobs/{uuid}/abcdefghijklmnopqrstuv"
    assert matcher.match(url) == BlobRef("o1", uuid, "abcdefghijklmnopqrstuv")
    assert matcher.match(url.replace("/storypost", "")) is None
