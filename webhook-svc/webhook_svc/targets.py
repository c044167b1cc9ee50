"""Which webhook URLs are accepted and which addresses a delivery may connect to (SSRF).

A URL is checked when it is added (its host must resolve, and only to public addresses) and
again at every connection: the HTTP client's resolver looks the host up itself, refuses the
connection when any address is off limits and hands on only the addresses it checked, which
the client connects to without a second lookup, so DNS rebinding cannot slip a private
address in between check and connect. The client's socket factory checks each address once
more as its socket is made: an address in the URL itself never passes the resolver.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from storypost_runtime.addresses import IpAddress, OffLimits, embedded_ipv4, off_limits
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


class RefusedAddress(OSError):
    """A host that resolves to an address deliveries must not reach; the message says why.
    An OSError, so that the HTTP client treats it as a connection that could not be made."""


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
            self.check(host, address)
        return addresses

    def check(self, host: str, address: IpAddress) -> None:
        """RefusedAddress when a delivery must not connect to `host` at `address`."""
        reason = self.refusal(address)
        if reason is not None:
            raise RefusedAddress(
                f"refused: {host} resolves to {address}, {reason}; webhooks must reach "
                "a public address"
            )


async def _lookup(host: str, port: int) -> list[IpAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise RefusedAddress(f"cannot resolve {host}: {error}") from None
    found: list[IpAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = _address_of(sockaddr)
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


def _address_of(sockaddr: tuple[Any, ...]) -> IpAddress:
    return ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])


class PolicyResolver(AbstractResolver):
    """aiohttp's resolver under the policy: every address of the host is checked and only
    checked addresses are handed on (all or none)."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._policy.resolve(host, port)
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


AddrInfo = tuple[Any, ...]


def guarded_sockets(policy: AddressPolicy) -> Callable[[AddrInfo], socket.socket]:
    """aiohttp's socket factory under the policy: the last check, on the very address the
    socket is about to connect to (an address written in the URL skips the resolver)."""

    def make(addr_info: AddrInfo) -> socket.socket:
        family, kind, proto, _, sockaddr = addr_info
        address = _address_of(sockaddr)
        policy.check(str(address), address)
        return socket.socket(family=family, type=kind, proto=proto)

    return make
