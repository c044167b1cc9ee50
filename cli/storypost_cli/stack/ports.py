"""Every port the embedded stack listens on: fixed defaults for `dev up`, free ones for tests."""

from __future__ import annotations

import socket
from collections.abc import Collection
from contextlib import ExitStack
from dataclasses import dataclass, fields
from typing import Self


@dataclass(frozen=True)
class StackPorts:
    """Loopback ports of every component, including the ones SeaweedFS would derive itself."""

    mongo: int = 27017
    nats: int = 4222
    nats_monitor: int = 8222
    s3: int = 8333
    # SeaweedFS derives gRPC ports as port + 10000 unless told; we always tell it, so free
    # port allocation can never collide with a derived one.
    s3_grpc: int = 18333
    seaweed_master: int = 9333
    seaweed_master_grpc: int = 19333
    seaweed_volume: int = 8382
    seaweed_volume_grpc: int = 18382
    seaweed_filer: int = 8888
    seaweed_filer_grpc: int = 18888
    account: int = 50051
    render: int = 50052
    publish: int = 50053
    webhook: int = 50054
    sandbox: int = 8090
    edge: int = 8080
    edge_metrics: int = 9100
    account_metrics: int = 9101
    render_metrics: int = 9102
    publish_metrics: int = 9103
    webhook_metrics: int = 9104
    sandbox_metrics: int = 9105

    def __post_init__(self) -> None:
        seen: dict[int, str] = {}
        for name, port in self.as_dict().items():
            if not 1 <= port <= 65535:
                raise ValueError(f"port {name}={port} is outside 1..65535")
            if port in seen:
                raise ValueError(f"port {port} is used twice: {seen[port]} and {name}")
            seen[port] = name

    def as_dict(self) -> dict[str, int]:
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def defaults(cls) -> Self:
        """The ports `make run` uses (edge on 8080)."""
        return cls()

    @classmethod
    def free(cls, host: str = "127.0.0.1") -> Self:
        """Ports the kernel says are free now, all distinct (for tests running side by side)."""
        names = [field.name for field in fields(cls)]
        return cls(**dict(zip(names, free_ports(len(names), host), strict=True)))


def free_ports(count: int, host: str = "127.0.0.1", avoid: Collection[int] = ()) -> list[int]:
    """`count` distinct ports the kernel says are free now, none of `avoid` (ports chosen
    earlier and released, which the kernel may hand out again)."""
    with ExitStack() as sockets:
        # Keep every socket bound until all are chosen, so no port is handed out twice.
        ports: list[int] = []
        while len(ports) < count:
            sock = sockets.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
            if port not in avoid:
                ports.append(port)
    return ports
