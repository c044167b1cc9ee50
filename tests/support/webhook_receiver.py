"""A real local HTTPS webhook receiver with a throwaway CA, for tests and the benchmark."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import socket
import ssl
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from storypost_runtime.component import component


@dataclass(frozen=True)
class Certificates:
    """A CA (its PEM is what webhook-svc is told to trust) and a server certificate it signed
    (for 127.0.0.1 and localhost unless make_certificates was given another address)."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def make_certificates(directory: Path, host: str = "127.0.0.1") -> Certificates:
    """Certificates that pass Python 3.13's strict X.509 checks (key usages, SAN, AKI/SKI),
    the server's for the IP address `host` (and localhost when that is 127.0.0.1)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "storypost test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address(host)),
                    *([x509.DNSName("localhost")] if host == "127.0.0.1" else []),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    certs = Certificates(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    certs.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    certs.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certs


@dataclass(frozen=True)
class Received:
    """One POST as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def delivery(self) -> str:
        return self.headers.get("x-service-delivery", "")


@dataclass(frozen=True)
class Answer:
    status: int = 200
    delay: float = 0.0


@component
class Receiver:
    """Records every POST per path and answers as told (a queue of answers per path, then 200).
    Each test uses its own path, so one receiver serves a whole session. `async with` starts
    it and closes it."""

    certs: Certificates
    host: str = "127.0.0.1"
    _received: dict[str, list[Received]] = field(
        init=False, default_factory=lambda: defaultdict(list)
    )
    _answers: dict[str, deque[Answer]] = field(
        init=False, default_factory=lambda: defaultdict(deque)
    )
    _default: dict[str, Answer] = field(init=False, default_factory=dict)
    _changed: asyncio.Condition = field(init=False, default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = field(init=False, default=None)
    port: int = field(init=False, default=0)

    @property
    def base_url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def answer(self, path: str, *answers: Answer) -> None:
        """The next answers for `path`, in order; after them the default."""
        self._answers[path].extend(answers)

    def default(self, path: str, answer: Answer) -> None:
        self._default[path] = answer

    def received(self, path: str) -> list[Received]:
        return list(self._received[path])

    async def wait_for(
        self, path: str, done: Callable[[list[Received]], bool], timeout: float = 15.0
    ) -> list[Received]:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: done(self._received[path]))
        return self.received(path)

    async def wait_count(self, path: str, count: int, timeout: float = 15.0) -> list[Received]:
        return await self.wait_for(path, lambda got: len(got) >= count, timeout)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        got = Received(
            request.path, {k.lower(): v for k, v in request.headers.items()}, body, time.time()
        )
        async with self._changed:
            self._received[request.path].append(got)
            self._changed.notify_all()
        queue = self._answers[request.path]
        answer = queue.popleft() if queue else self._default.get(request.path, Answer())
        if answer.delay:
            await asyncio.sleep(answer.delay)
        return web.Response(status=answer.status, text="ok")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock, ssl_context=self.certs.server_context())
        await site.start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
