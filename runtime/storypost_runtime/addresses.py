"""Which IP addresses code acting for a tenant must not reach (SSRF): one rule for every
service that fetches or connects on a tenant's behalf (render-svc's page fetcher,
webhook-svc's deliveries). Each service words the refusal for its own callers."""

from __future__ import annotations

import ipaddress
from enum import StrEnum

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class OffLimits(StrEnum):
    """Why an address is off limits, checked in this order."""

    LOOPBACK = "loopback"
    # 169.254.169.254, the cloud metadata address, is link-local.
    LINK_LOCAL = "link-local"
    MULTICAST = "multicast"
    UNSPECIFIED = "unspecified"
    RESERVED = "reserved"
    # RFC 1918, unique local (fd00:ec2::254, metadata), shared 100.64/10 (Alibaba's metadata
    # 100.100.100.200), documentation and benchmark ranges: anything not global.
    PRIVATE = "private"


def embedded_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64): where it really goes."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def off_limits(address: IpAddress) -> OffLimits | None:
    """Why `address` (or the IPv4 address it carries) is off limits; None for a public one."""
    embedded = embedded_ipv4(address)
    if embedded is not None:
        return off_limits(embedded)
    if address.is_loopback:
        return OffLimits.LOOPBACK
    if address.is_link_local:
        return OffLimits.LINK_LOCAL
    if address.is_multicast:
        return OffLimits.MULTICAST
    if address.is_unspecified:
        return OffLimits.UNSPECIFIED
    if address.is_reserved:
        return OffLimits.RESERVED
    if address.is_private or not address.is_global:
        return OffLimits.PRIVATE
    return None
