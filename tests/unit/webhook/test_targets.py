"""Which webhook URLs are accepted and which addresses deliveries may reach (SSRF)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from storypost_runtime.errors import InvalidArgument
from webhook_svc.targets import (
    AddressPolicy,
    PolicyResolver,
    RefusedAddress,
    check_reachable,
    guarded_sockets,
    normalize_url,
)

PRODUCTION = AddressPolicy()


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.8", "a private address"),
        ("172.16.4.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("169.254.169.254", "a link-local or cloud metadata address"),
        ("fe80::1", "a link-local or cloud metadata address"),
        ("fd00:ec2::254", "a private address"),
        ("100.100.100.200", "a private address"),
        ("0.0.0.0", "a reserved address"),
        ("224.0.0.1", "a multicast address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("::ffff:10.0.0.1", "a private address"),
        ("2002:a00:1::", "a private address"),  # 6to4 around 10.0.0.1
        ("64:ff9b::a9fe:a9fe", "a link-local or cloud metadata address"),  # NAT64 metadata
        ("198.51.100.7", "a private address"),  # documentation range
    ],
)
def test_inward_addresses_are_refused(address: str, reason: str) -> None:
    assert PRODUCTION.refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2001:4860:4860::8888"])
def test_public_addresses_are_fine(address: str) -> None:
    assert PRODUCTION.refusal(ipaddress.ip_address(address)) is None


def test_allowed_networks_and_development_loopback() -> None:
    tests = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    assert tests.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert tests.refusal(ipaddress.ip_address("10.0.0.1")) == "a private address"
    development = AddressPolicy(allow_loopback=True)
    assert development.refusal(ipaddress.ip_address("::1")) is None
    assert development.refusal(ipaddress.ip_address("169.254.169.254")) is not None


async def test_resolve_refuses_names_that_point_inward() -> None:
    with pytest.raises(RefusedAddress, match=r"localhost resolves to .*loopback"):
        await PRODUCTION.resolve("localhost", 443)
    with pytest.raises(RefusedAddress, match="cannot resolve"):
        await PRODUCTION.resolve("no-such-host.invalid", 443)
    assert await PRODUCTION.resolve("8.8.8.8", 443) == [ipaddress.ip_address("8.8.8.8")]


async def test_check_reachable_turns_a_refusal_into_a_clear_error() -> None:
    with pytest.raises(InvalidArgument) as raised:
        await check_reachable(normalize_url("https://10.2.3.4/h", allow_http_loopback=False),
                              PRODUCTION)  # fmt: skip
    assert "10.2.3.4, a private address" in raised.value.message
    assert "url" in raised.value.field_violations


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://example.com/h", "must use https://"),
        ("http://127.0.0.1:8000/h", "must use https://"),
        ("gopher://example.com", "must start with https://"),
        ("https://u:p@example.com/h", "user name or password"),
        ("https://example.com/h#x", "#fragment"),
        ("https://exa mple.com/", "spaces or control characters"),
        ("https:///path", "must name a host"),
        ("https://example.com/" + "a" * 2050, "at most 2048 characters"),
        ("   ", "a URL is required"),
    ],
)
def test_bad_urls_are_refused(url: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        normalize_url(url, allow_http_loopback=False)
    assert says in raised.value.message


def test_urls_are_normalized_and_http_loopback_is_a_development_option() -> None:
    url = normalize_url("  https://Bücher.Example:8443/hook?x=1 ", allow_http_loopback=False)
    assert str(url) == "https://xn--bcher-kva.example:8443/hook?x=1"
    assert str(normalize_url("http://127.0.0.1:9000/h", allow_http_loopback=True))
    assert str(normalize_url("http://localhost:9000/h", allow_http_loopback=True))
    with pytest.raises(InvalidArgument, match="must use https://"):
        normalize_url("http://example.com/h", allow_http_loopback=True)


async def test_the_resolver_hands_on_only_checked_addresses() -> None:
    with pytest.raises(RefusedAddress, match=r"localhost resolves to .*loopback"):
        await PolicyResolver(PRODUCTION).resolve("localhost", 443)
    found = await PolicyResolver(AddressPolicy(allow_loopback=True)).resolve("localhost", 443)
    # Numeric addresses, the ones checked: the client connects to them without a second lookup.
    assert found and all(ipaddress.ip_address(f["host"]).is_loopback for f in found)
    assert all(f["hostname"] == "localhost" and f["port"] == 443 for f in found)
    assert all(f["flags"] & socket.AI_NUMERICHOST for f in found)


def test_no_socket_is_made_for_a_refused_address() -> None:
    make = guarded_sockets(PRODUCTION)
    for sockaddr in (("127.0.0.1", 443), ("::ffff:10.0.0.1", 443, 0, 0), ("169.254.169.254", 80)):
        family = socket.AF_INET6 if ":" in sockaddr[0] else socket.AF_INET
        with pytest.raises(RefusedAddress, match="refused"):
            make((family, socket.SOCK_STREAM, 0, "", sockaddr))
    made = make((socket.AF_INET, socket.SOCK_STREAM, 0, "", ("8.8.8.8", 443)))
    try:
        assert made.family == socket.AF_INET and made.type == socket.SOCK_STREAM
    finally:
        made.close()
