"""NATS as production runs it, for the container suite's production shape: a password and TLS
required of every client (docs/deploy.md "NATS"). The certificates live in a directory that is
mounted into the NATS container and every service's container at the same path, so the
STORYPOST_NATS_* settings name files that exist both there and in the test process."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storypost.testing.certificates import Certificates, make_certificates

USER = "storypost"


@dataclass(frozen=True)
class SecuredNats:
    directory: Path
    password: str
    certs: Certificates

    @classmethod
    def create(cls) -> SecuredNats:
        directory = Path(tempfile.mkdtemp(prefix="storypost-nats-"))
        certs = make_certificates(directory)
        # The images run as uid 10001: the directory and files are readable by it (a test's
        # throwaway key; a cluster mounts them from a Secret).
        directory.chmod(0o755)
        for path in directory.iterdir():
            path.chmod(0o644)
        return cls(directory, secrets.token_urlsafe(16), certs)

    def server_args(self) -> list[str]:
        """nats-server's arguments: this password required, TLS with the CA's certificate."""
        return [
            "--user", USER, "--pass", self.password,
            "--tls", "--tlscert", str(self.certs.cert_file), "--tlskey", str(self.certs.key_file),
        ]  # fmt: skip

    def client_env(self, port: int) -> dict[str, str]:
        """Every component's settings for it: the `tls://` URL, the identity, the CA."""
        return {
            "STORYPOST_NATS_URL": f"tls://127.0.0.1:{port}",
            "STORYPOST_NATS_USER": USER,
            "STORYPOST_NATS_PASSWORD": self.password,
            "STORYPOST_NATS_TLS_CA_FILE": str(self.certs.ca_file),
        }

    def volumes(self) -> dict[str, dict[str, Any]]:
        """docker-py's `volumes`: the directory, read-only, at the same path."""
        return {str(self.directory): {"bind": str(self.directory), "mode": "ro"}}

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
