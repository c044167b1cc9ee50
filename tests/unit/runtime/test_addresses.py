"""storypost_runtime/addresses.py: the one SSRF address rule render-svc and webhook-svc use."""

from __future__ import annotations

import ipaddress

import pytest

from render_svc.netguard import blocked_reason
from storypost_runtime.addresses import OffLimits, off_limits
from webhook_svc.targets import AddressPolicy


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", OffLimits.LOOPBACK),
        ("::1", OffLimits.LOOPBACK),
        ("::ffff:127.0.0.1", OffLimits.LOOPBACK),  # mapped
        ("2002:7f00:1::", OffLimits.LOOPBACK),  # 6to4 of 127.0.0.1
        ("64:ff9b::a9fe:a9fe", OffLimits.LINK_LOCAL),  # NAT64 of the metadata address
        ("169.254.169.254", OffLimits.LINK_LOCAL),
        ("fe80::1", OffLimits.LINK_LOCAL),
        ("224.0.0.1", OffLimits.MULTICAST),
        ("0.0.0.0", OffLimits.UNSPECIFIED),
        ("240.0.0.1", OffLimits.RESERVED),
        ("10.1.2.3", OffLimits.PRIVATE),
        ("100.100.100.200", OffLimits.PRIVATE),
        ("fd00:ec2::254", OffLimits.PRIVATE),
        ("93.184.216.34", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_one_rule_for_every_service(address: str, kind: OffLimits | None) -> None:
    ip = ipaddress.ip_address(address)
    assert off_limits(ip) == kind
    # Both services refuse exactly what the rule refuses (each in its own words).
    assert (blocked_reason(ip) is None) == (kind is None)
    assert (AddressPolicy().refusal(ip) is None) == (kind is None)


def test_webhooks_may_allow_loopback_and_named_networks_only() -> None:
    policy = AddressPolicy(
        allowed_networks=(ipaddress.ip_network("10.9.0.0/16"),), allow_loopback=True
    )
    assert policy.refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert policy.refusal(ipaddress.ip_address("10.9.1.1")) is None
    assert policy.refusal(ipaddress.ip_address("10.8.1.1")) == "a private address"
    assert policy.refusal(ipaddress.ip_address("169.254.169.254")) == (
        "a link-local or cloud metadata address"
    )
