"""Which webhook URLs are accepted and which addresses a delivery may connect to (SSRF).

A URL is checked when it is added (its host must resolve, and only to public addresses) and
again at every connection: the HTTP client's network backend resolves the host itself,
refuses the connection when any address is off limits, and connects to exactly the address
it checked, so DNS rebinding cannot slip a private address in between check and connect.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass

import httpcore
import httpx

from storypost_runtime.addresses import IpAddress, OffLimits, embedded_ipv4, off_limits
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_URL_LENGTH = 2048
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


# How a refused delivery address is named (storypost_runtime.addresses has the rule).
_REASONS = {
    OffLimits.LOOPBACK: "a loopback address",
    OffLimits.LINK_LOCAL: "a link-local or cloud metadata address",
    OffLimits.MULTICAST: "a multicast address",
    OffLimits.UNSPECIFIED: "a reserved address",
    OffLimits.RESERVED: "a reserved address",
    OffLimits.PRIVATE: "a private address",
}


class RefusedAddress(httpcore.ConnectError):
    """A host that resolves to an address deliveries must not reach; the message says why."""


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses only, except the networks a deployment explicitly allows."""

    allowed_networks: tuple[Network, ...] = ()
    # Development: loopback receivers (plain http included) are fine.
    allow_loopback: bool = False

    def refusal(self, address: IpAddress) -> str | None:
        """Why a delivery must not connect to `address`, or None when it may."""
        if any(address in network for network in self.allowed_networks):
            return None
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return self.refusal(embedded)
        kind = off_limits(address)
        if kind is OffLimits.LOOPBACK and self.allow_loopback:
            return None
        return None if kind is None else _REASONS[kind]

    async def resolve(self, host: str, port: int) -> list[IpAddress]:
        """Every address of `host`; RefusedAddress when one is off limits or none is found."""
        try:
            addresses: list[IpAddress] = [ipaddress.ip_address(host.strip("[]"))]
        except ValueError:
            addresses = await _lookup(host, port)
        for address in addresses:
            reason = self.refusal(address)
            if reason is not None:
                raise RefusedAddress(
                    f"refused: {host} resolves to {address}, {reason}; webhooks must reach "
                    "a public address"
                )
        return addresses


async def _lookup(host: str, port: int) -> list[IpAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise RefusedAddress(f"cannot resolve {host}: {error}") from None
    found: list[IpAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise RefusedAddress(f"cannot resolve {host}: no address")
    return found


def _bad_url(message: str) -> InvalidArgument:
    return InvalidArgument(f"invalid webhook url: {message}", field_violations={"url": [message]})


def _is_loopback_host(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def normalize_url(raw: str, *, allow_http_loopback: bool) -> httpx.URL:
    """The URL as it will be called, or InvalidArgument saying exactly what is wrong."""
    text = raw.strip()
    if not text:
        raise _bad_url("a URL is required")
    if len(text) > MAX_URL_LENGTH:
        raise _bad_url(f"must be at most {MAX_URL_LENGTH} characters long (got {len(text)})")
    if any(ord(char) < 0x21 or ord(char) == 0x7F for char in text):
        raise _bad_url("must not contain spaces or control characters")
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, UnicodeError) as error:
        raise _bad_url(f"not a valid URL ({error})") from None
    if url.scheme not in ("https", "http"):
        raise _bad_url("must start with https://")
    if not url.host:
        raise _bad_url("must name a host")
    if url.scheme == "http" and not (allow_http_loopback and _is_loopback_host(url.host)):
        raise _bad_url("must use https:// (plain http is refused)")
    if url.userinfo:
        raise _bad_url("must not contain a user name or password")
    if url.fragment:
        raise _bad_url("must not contain a #fragment (it is never sent)")
    return url


async def check_reachable(url: httpx.URL, policy: AddressPolicy) -> None:
    """At add time: the host must resolve, and only to addresses deliveries may reach."""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        await policy.resolve(url.raw_host.decode("ascii"), port)
    except RefusedAddress as error:
        raise _bad_url(str(error)) from None


@component
class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network layer with the policy applied to every new connection."""

    policy: AddressPolicy
    inner: httpcore.AsyncNetworkBackend

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Sequence[httpcore.SOCKET_OPTION] | None = None,  # type: ignore[override]
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await self.policy.resolve(host, port)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
        failure: Exception | None = None
        for address in addresses:
            try:
                # The checked address itself: TLS still verifies the certificate for `host`
                # (httpcore passes the URL's host as server_hostname).
                return await self.inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Sequence[httpcore.SOCKET_OPTION] | None = None,  # type: ignore[override]
    ) -> httpcore.AsyncNetworkStream:
        raise RefusedAddress("refused: unix sockets are not webhook targets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)
