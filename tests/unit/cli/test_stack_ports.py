"""StackPorts: documented defaults, distinct free ports, no collisions with SeaweedFS's own."""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest

from storypost_cli.stack import StackPorts
from storypost_cli.stack.ports import free_ports


def test_defaults_are_the_documented_ports() -> None:
    ports = StackPorts.defaults()
    assert (ports.mongo, ports.nats, ports.nats_monitor, ports.s3) == (27017, 4222, 8222, 8333)
    assert (ports.account, ports.render, ports.publish, ports.webhook) == (
        50051,
        50052,
        50053,
        50054,
    )
    assert (ports.sandbox, ports.edge) == (8090, 8080)
    assert [
        ports.edge_metrics,
        ports.account_metrics,
        ports.render_metrics,
        ports.publish_metrics,
        ports.webhook_metrics,
        ports.sandbox_metrics,
    ] == list(range(9100, 9106))


def test_seaweedfs_ports_avoid_the_edge_and_its_derived_grpc_ports() -> None:
    ports = StackPorts.defaults()
    seaweed = [ports.seaweed_master, ports.seaweed_volume, ports.seaweed_filer, ports.s3]
    assert ports.edge not in seaweed
    # SeaweedFS would derive port + 10000 by itself; we pass exactly those, explicitly.
    assert [ports.seaweed_master_grpc, ports.seaweed_volume_grpc, ports.seaweed_filer_grpc] == [
        ports.seaweed_master + 10000,
        ports.seaweed_volume + 10000,
        ports.seaweed_filer + 10000,
    ]
    assert ports.s3_grpc == ports.s3 + 10000


def test_defaults_are_all_distinct() -> None:
    values = list(StackPorts.defaults().as_dict().values())
    assert len(values) == len(set(values))


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = StackPorts.free()
    values = list(ports.as_dict().values())
    assert len(values) == len(set(values))
    assert values != list(StackPorts.defaults().as_dict().values())
    for port in values[:5]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_used_twice_is_rejected() -> None:
    with pytest.raises(ValueError, match="used twice"):
        replace(StackPorts.defaults(), s3=8080)


@pytest.mark.parametrize("bad", [0, -1, 65536])
def test_a_port_out_of_range_is_rejected(bad: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        replace(StackPorts.defaults(), mongo=bad)


def test_free_ports_never_hand_out_a_port_to_avoid() -> None:
    first = free_ports(20)
    again = free_ports(20, avoid=first)
    assert len(set(again)) == 20 and not set(again) & set(first)
