"""NATS with authentication and TLS required (Debian's nats-server, as production runs the
official one): a component with the right identity and the server's CA connects; a wrong
password, or a CA that did not sign the server, is refused at once with a message naming the
variables to check (never their values); a service started so stops with exit 2."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from storypost.testing.certificates import Certificates, make_certificates
from storypost_runtime.bus import NatsRefused, nats_connection
from storypost_runtime.settings import NatsSettings
from tests.support.mongo import memory_mongo_server

pytestmark = pytest.mark.integration
USER = "storypost"


@dataclass(frozen=True)
class SecuredNats:
    url: str
    password: str
    certs: Certificates


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredNats]:
    binary = shutil.which("nats-server")
    assert binary, "nats-server: Debian's package (scripts/ensure-apt.sh installs it)"
    root = tmp_path_factory.mktemp("nats-secured")
    certs = make_certificates(root / "certs")
    password = secrets.token_urlsafe(16)
    port = free_port()
    process = subprocess.Popen(
        [
            binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(root / "data"),
            "--user", USER, "--pass", password,
            "--tls", "--tlscert", str(certs.cert_file), "--tlskey", str(certs.key_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(root / "nats.log").open("w"),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, (root / "nats.log").read_text()
                time.sleep(0.1)
        yield SecuredNats(f"tls://127.0.0.1:{port}", password, certs)
    finally:
        process.terminate()
        process.wait(timeout=20)


def settings(nats: SecuredNats, **changes: str) -> NatsSettings:
    given = {
        "nats_url": nats.url,
        "nats_user": USER,
        "nats_password": nats.password,
        "nats_tls_ca_file": str(nats.certs.ca_file),
    }
    return NatsSettings.model_validate(given | changes)


async def test_the_right_identity_over_tls_connects_and_publishes(secured: SecuredNats) -> None:
    async with nats_connection(settings(secured), "identity test") as client:
        assert client.is_connected
        assert client.connected_url is not None and client.connected_url.scheme == "tls"
        reply = await client.request("$JS.API.INFO", b"", timeout=5)
        assert b"memory" in reply.data  # JetStream answered over the authenticated link


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"nats_password": "not-the-password"}, "STORYPOST_NATS_PASSWORD"),
        ({"nats_user": "", "nats_password": ""}, "STORYPOST_NATS_URL"),
    ],
)
async def test_a_wrong_identity_is_refused_at_once(
    secured: SecuredNats, changes: dict[str, str], named: str
) -> None:
    started = time.monotonic()
    with pytest.raises(NatsRefused) as refused:
        async with nats_connection(settings(secured, **changes), "identity test"):
            pass
    assert time.monotonic() - started < 15
    message = str(refused.value)
    assert named in message and "check" in message
    assert secured.password not in message and "not-the-password" not in message


async def test_a_server_signed_by_another_ca_is_refused(
    secured: SecuredNats, tmp_path: Path
) -> None:
    other = make_certificates(tmp_path / "other")
    with pytest.raises(NatsRefused) as refused:
        async with nats_connection(
            settings(secured, nats_tls_ca_file=str(other.ca_file)), "identity test"
        ):
            pass
    assert "STORYPOST_NATS_TLS_CA_FILE" in str(refused.value)


@pytest.mark.parametrize(
    ("module", "name"), [("publish_svc", "publish-svc"), ("account_svc", "account-svc")]
)
async def test_a_service_with_a_wrong_password_stops_at_start_naming_it(
    secured: SecuredNats, module: str, name: str
) -> None:
    """publish-svc needs the bus; account-svc serves without it, yet a NATS that answers and
    refuses its identity stops it at start too (its events would otherwise wait forever)."""
    async with memory_mongo_server() as mongo_url:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "STORYPOST_MONGO_URL": mongo_url,
            "STORYPOST_NATS_URL": secured.url,
            "STORYPOST_NATS_USER": USER,
            "STORYPOST_NATS_PASSWORD": "wrong-" + secured.password,
            "STORYPOST_NATS_TLS_CA_FILE": str(secured.certs.ca_file),
            "STORYPOST_GRPC_PORT": "0",
            "STORYPOST_METRICS_PORT": "0",
        }
        # In this event loop: the memory MongoDB answers while the service starts.
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
        finally:
            if process.returncode is None:
                process.kill()
    stderr = err.decode(errors="replace")
    assert process.returncode == 2, stderr[-3000:]
    assert f"{name} cannot start: NATS refused" in stderr
    assert "STORYPOST_NATS_PASSWORD" in stderr
    assert secured.password not in stderr + out.decode(errors="replace")


def test_settings_refuse_two_identities_or_half_of_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one identity"):
        NatsSettings(nats_user="u", nats_password="p", nats_token="t")
    with pytest.raises(ValueError, match="go together"):
        NatsSettings(nats_user="u")
    with pytest.raises(ValueError, match="STORYPOST_NATS_CREDS_FILE: no file"):
        NatsSettings(nats_creds_file=str(tmp_path / "missing.creds"))
