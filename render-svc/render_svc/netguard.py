"""SSRF rules: which addresses a page may reach, and an HTTP fetcher that enforces them.

Every request of a rendered page (and every video source) is fetched here, not by the
browser: the resolver checks the addresses a name resolves to and the connection uses
exactly those, so DNS rebinding cannot slip a private address in between check and connect.
Redirects are followed here too, each hop checked again.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from storypost_runtime.addresses import IpAddress, OffLimits, off_limits
from storypost_runtime.component import component

MAX_REDIRECTS = 5
# Hop-by-hop and encoding headers never pass between the page and the origin server.
_DROP_REQUEST_HEADERS = frozenset(
    {"host", "connection", "keep-alive", "proxy-authorization", "te", "upgrade", "accept-encoding"}
)
_DROP_RESPONSE_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-encoding",
        "content-length",
        "upgrade",
        "proxy-authenticate",
    }
)


class Blocked(Exception):
    """A URL the sandbox must not reach; the message says why (shown to callers)."""


class TooLarge(Exception):
    """A response over the size limit."""


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address of a host written in a legacy IPv4 form resolvers accept (`127.1`,
    `2130706433`, `0x7f000001`, `0177.0.0.1`), else None."""
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


# How a page's refused address is named in its warnings and errors.
_REASONS = {
    OffLimits.LOOPBACK: "loopback address",
    OffLimits.LINK_LOCAL: "link-local or metadata address",
    OffLimits.MULTICAST: "multicast address",
    OffLimits.UNSPECIFIED: "unspecified address",
    OffLimits.RESERVED: "private or reserved address",
    OffLimits.PRIVATE: "private or reserved address",
}


def blocked_reason(address: IpAddress) -> str | None:
    """Why an address is off limits (storypost_runtime.addresses), or None for a public one."""
    kind = off_limits(address)
    return None if kind is None else _REASONS[kind]


def port_of(url: str) -> int:
    parts = urlsplit(url)
    if parts.port is not None:
        return parts.port
    return 443 if parts.scheme == "https" else 80


@dataclass(frozen=True)
class NetRules:
    """The sandbox's rules; `allowed_hosts` are `host:port` pairs exempt from them (tests)."""

    allowed_hosts: frozenset[str] = frozenset()

    def is_exempt(self, host: str, port: int) -> bool:
        return f"{host.lower()}:{port}" in self.allowed_hosts

    def check_url(self, url: str) -> None:
        """Scheme, host and literal addresses; names are checked when they resolve."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise Blocked(f"{parts.scheme or 'relative'}: URLs are not allowed")
        host = parts.hostname
        if not host:
            raise Blocked("the URL has no host")
        if parts.username or parts.password:
            raise Blocked("URLs with credentials are not allowed")
        if self.is_exempt(host, port_of(url)):
            return
        try:
            literal: IpAddress = ipaddress.ip_address(host)
        except ValueError:
            if host.rstrip(".").lower() == "localhost" or host.lower().endswith(".localhost"):
                raise Blocked("loopback address") from None
            legacy = legacy_ipv4(host)
            if legacy is None:
                return
            literal = legacy
        reason = blocked_reason(literal)
        if reason:
            raise Blocked(reason)


@component
class GuardedResolver(AbstractResolver):
    """Resolves like the default resolver, then refuses names with any non-public address."""

    rules: NetRules
    _inner: AbstractResolver = field(init=False, default_factory=DefaultResolver)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        if self.rules.is_exempt(host, port):
            return results
        for result in results:
            reason = blocked_reason(ipaddress.ip_address(result["host"]))
            if reason:
                raise Blocked(f"{host} resolves to a {reason}")
        return results

    async def close(self) -> None:
        await self._inner.close()


@dataclass(frozen=True)
class FetchedResponse:
    """A response after redirects: final URL, status, headers safe to hand to the browser."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes


def _request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _DROP_REQUEST_HEADERS}


def browser_headers(headers: Any) -> dict[str, str]:
    """Response headers to hand to the browser (body already decoded, length recomputed)."""
    kept: dict[str, str] = {}
    for key, value in headers.items():
        lower = key.lower()
        if lower in _DROP_RESPONSE_HEADERS:
            continue
        # Several Set-Cookie lines are joined the way Playwright expects them.
        kept[lower] = f"{kept[lower]}\n{value}" if lower in kept else value
    return kept


@component
class GuardedFetcher:
    """aiohttp under the sandbox rules: no cookies kept, redirects checked, sizes bounded."""

    rules: NetRules
    _: KW_ONLY
    connect_timeout: float = 10.0
    _session: aiohttp.ClientSession = field(init=False)

    def __post_init__(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                resolver=GuardedResolver(self.rules),
                limit=64,
                ttl_dns_cache=None,
                use_dns_cache=False,
            ),
            # One session serves every organization: it must never remember cookies.
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout),
            auto_decompress=True,
        )

    async def close(self) -> None:
        await self._session.close()

    @asynccontextmanager
    async def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        seconds: float = 30.0,
        follow_redirects: bool = True,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """A checked request; redirects are followed (and checked) here, never by the browser."""
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            self.rules.check_url(current)
            try:
                response = await self._session.request(
                    method,
                    current,
                    headers=_request_headers(headers or {}),
                    data=body,
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=seconds),
                )
            except aiohttp.ClientConnectorError as error:
                # The resolver's Blocked arrives wrapped; keep its reason.
                cause = error.__cause__ or error.__context__
                if isinstance(cause, Blocked):
                    raise cause from None
                if isinstance(error.os_error, Blocked):
                    raise error.os_error from None
                raise
            location = response.headers.get("Location")
            if follow_redirects and response.status in (301, 302, 303, 307, 308) and location:
                response.release()
                current = urljoin(current, location)
                if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                    method, body = "GET", None
                continue
            try:
                yield response
            finally:
                response.release()
            return
        raise Blocked(f"more than {MAX_REDIRECTS} redirects")

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        max_bytes: int,
        seconds: float = 30.0,
    ) -> FetchedResponse:
        """The whole response in memory, refused past max_bytes."""
        async with self.open(method, url, headers=headers, body=body, seconds=seconds) as resp:
            body_bytes = await read_body(resp, max_bytes)
            return FetchedResponse(
                str(resp.url), resp.status, browser_headers(resp.headers), body_bytes
            )


async def read_body(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The whole body, refused (TooLarge) as soon as it is known to pass max_bytes."""
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise TooLarge(f"{declared} bytes is over the limit of {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(256 * 1024):
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
