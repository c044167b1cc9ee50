"""A canary on loopback that records anything reaching it: TCP connections (with or without
a byte sent) and UDP datagrams, on one port."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class WireCanary:
    port: int = 0
    hits: list[str] = field(default_factory=list)
    stopped: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, what: str) -> None:
        with self._lock:
            self.hits.append(what)

    def seen(self) -> list[str]:
        with self._lock:
            return list(self.hits)


def _bind_both() -> tuple[socket.socket, socket.socket]:
    """A TCP listener and a UDP socket on the same free loopback port."""
    for _ in range(50):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", port))
        except OSError:
            tcp.close()
            udp.close()
            continue
        tcp.listen(64)
        return tcp, udp
    raise RuntimeError("no port free for both TCP and UDP")


def _serve_tcp(canary: WireCanary, listener: socket.socket) -> None:
    while True:
        try:
            conn, peer = listener.accept()
        except OSError:
            return
        if canary.stopped.is_set():
            conn.close()
            return
        with conn:
            conn.settimeout(0.5)
            data = b""
            with contextlib.suppress(OSError):
                data = conn.recv(200)
            first = data.split(b"\r\n", 1)[0].decode("latin-1")
            canary.record(f"tcp from {peer[0]}: {first!r}")


def _serve_udp(canary: WireCanary, sock: socket.socket) -> None:
    while True:
        try:
            data, peer = sock.recvfrom(4096)
        except OSError:
            return
        if canary.stopped.is_set():
            return
        canary.record(f"udp from {peer[0]}: {data[:20].hex()}")


@contextlib.contextmanager
def wire_canary() -> Iterator[WireCanary]:
    tcp, udp = _bind_both()
    canary = WireCanary(port=tcp.getsockname()[1])
    threads = [
        threading.Thread(target=_serve_tcp, args=(canary, tcp), daemon=True),
        threading.Thread(target=_serve_udp, args=(canary, udp), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        yield canary
    finally:
        canary.stopped.set()
        for sock in (tcp, udp):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
