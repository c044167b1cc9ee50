"""The storypost stack as containers of our images (each component its own container).

An address such as `127.0.0.1:PORT` must mean the same thing inside the containers and in
the test process: base URLs, presigned S3 URLs and the edge's public URL are handed across,
and tests run servers on the host's loopback that the services call (webhook receivers, page
servers). Two network modes (STORYPOST_CONTAINER_NETWORK):

- `host` (default): every container uses the host's network namespace and listens on
  127.0.0.1 only, exactly like the process stack; all of the above works.
- `bridge`: a Docker network made for this run; all containers share the network namespace
  of a small "pod" container on it (as a Kubernetes pod's containers do), which publishes each
  component's port on 127.0.0.1 under the same number. Isolated from the host, so services
  cannot call servers of the test process.

Either way the STORYPOST_* settings are those of the process stack, health is checked from the
host with the process stack's probes, and `stop()` removes every container and network made.

The production shape (`replicas=2, production=True`; docs/deploy.md): every service and the
edge run as several replicas on the host network, each on ports of its own; callers balance
over a service's replicas round robin (`ipv4:127.0.0.1:A,127.0.0.1:B`, what a headless
Service's DNS answer gives in a cluster), the edges sit behind a load balancer on the stack's
edge port, and every service runs with STORYPOST_ENVIRONMENT=production and keys made for
the run. A component name (`account`) means all of its replicas (kill, stop, start); a
replica is named `account-2`.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import signal
import tempfile
import time
import uuid
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from cryptography.fernet import Fernet

from storypost.testing.balancer import Backend, BalancerThread
from storypost.testing.dependencies import (
    DEPENDENCIES,
    POD_IMAGE,
    StackImages,
    choose_images,
    docker_client,
)
from storypost.testing.secured_nats import SecuredNats
from storypost_cli.stack import StackError, StackPorts, health
from storypost_cli.stack.base import StackBase
from storypost_cli.stack.components import (
    SERVICES,
    STAGES,
    ComponentSpec,
    build_specs,
    stack_env,
)
from storypost_cli.stack.ports import free_ports
from storypost_runtime.service_auth import CALLERS, ServiceCredential

RUN_LABEL = "storypost.test-run"
OWNER_LABEL = "storypost.owner-pid"
COMPONENT_LABEL = "storypost.component"
_POLL_SECONDS = 0.25
_PROBE_LIMIT_SECONDS = 5.0
_LOG_TAIL_LINES = 20
# Chromium needs more shared memory than Docker's default 64 MiB.
_RENDER_SHM = "512m"
NetworkMode = Literal["host", "bridge"]
# What runs as several replicas in the production shape (the dependencies and the sandbox
# network stay single).
REPLICATED = ("account", "render", "publish", "webhook", "edge")
# The services with a schema: `storypost migrate` runs before they start, in one's image.
MIGRATED = ("publish", "account", "render", "webhook")


def production_env() -> dict[str, str]:
    """STORYPOST_ENVIRONMENT=production and a secret of its own for every key it requires."""
    return {
        "STORYPOST_ENVIRONMENT": "production",
        "STORYPOST_ACCOUNT_TOKEN_KEY": Fernet.generate_key().decode(),
        "STORYPOST_WEBHOOK_SECRET_KEY": Fernet.generate_key().decode(),
        "STORYPOST_PLATFORM_CLIENT_SECRET": secrets.token_urlsafe(32),
        # The store (SeaweedFS of our image) is given the same identity.
        "STORYPOST_S3_SECRET_KEY": secrets.token_urlsafe(24),
    }


def replica_name(component: str, replica: int) -> str:
    return component if replica == 1 else f"{component}-{replica}"


def base_of(name: str) -> str:
    """`account-2` → `account`."""
    base, sep, number = name.rpartition("-")
    return base if sep and number.isdigit() else name


# render-svc's seccomp profile: the allow list the overlays install (docs/deploy-kubernetes.md).
RENDER_SECCOMP = (
    Path(__file__).resolve().parents[3] / "deploy/k8s/components/render-seccomp/render-svc.json"
)


def render_seccomp_profile() -> str:
    """render-svc's seccomp profile, as the engine takes it inline (the Kubernetes one)."""
    return RENDER_SECCOMP.read_text()


def network_mode() -> NetworkMode:
    value = os.environ.get("STORYPOST_CONTAINER_NETWORK", "host").strip().lower() or "host"
    if value not in ("host", "bridge"):
        raise ValueError(f"STORYPOST_CONTAINER_NETWORK={value!r}: expected host or bridge")
    return value  # type: ignore[return-value]


def _service_env(component: str, ports: StackPorts, bind: str) -> dict[str, str]:
    """What the process stack gives each component, listening on `bind`."""
    metrics = {"STORYPOST_METRICS_HOST": bind}
    grpc_port = {"account": ports.account, "render": ports.render, "publish": ports.publish}
    grpc_port["webhook"] = ports.webhook
    if component in grpc_port:
        metrics_port = getattr(ports, f"{component}_metrics")
        return {
            **metrics,
            "STORYPOST_GRPC_HOST": bind,
            "STORYPOST_GRPC_PORT": str(grpc_port[component]),
            "STORYPOST_METRICS_PORT": str(metrics_port),
        }
    if component == "edge":
        return {
            **metrics,
            "STORYPOST_EDGE_HOST": bind,
            "STORYPOST_EDGE_PORT": str(ports.edge),
            "STORYPOST_METRICS_PORT": str(ports.edge_metrics),
        }
    if component == "sandbox":
        return {
            **metrics,
            "STORYPOST_SANDBOX_HOST": bind,
            "STORYPOST_SANDBOX_PORT": str(ports.sandbox),
            "STORYPOST_METRICS_PORT": str(ports.sandbox_metrics),
        }
    return {}


def _seaweed_port_flags(ports: StackPorts) -> list[str]:
    return [
        f"-master.port={ports.seaweed_master}",
        f"-master.port.grpc={ports.seaweed_master_grpc}",
        f"-volume.port={ports.seaweed_volume}",
        f"-volume.port.grpc={ports.seaweed_volume_grpc}",
        f"-filer.port={ports.seaweed_filer}",
        f"-filer.port.grpc={ports.seaweed_filer_grpc}",
        f"-s3.port={ports.s3}",
        f"-s3.port.grpc={ports.s3_grpc}",
    ]


def _dependency_run(
    component: str,
    upstream: bool,
    ports: StackPorts,
    env: Mapping[str, str],
    bind: str,
    secured: SecuredNats | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Command and environment of a dependency container (ours or the official image); NATS
    requires a password and TLS when `secured` is given."""
    if component == "mongo":
        if upstream:
            return ["mongod", "--bind_ip", bind, "--port", str(ports.mongo)], {}
        args = ["--host", bind, "--port", str(ports.mongo), "--path", "/data/mongo.sqlite"]
        return args, {"MONGO_PORT": str(ports.mongo)}
    if component == "nats":
        # Both images start nats-server with these arguments.
        args = ["-js", "-sd", "/data", "-a", bind, "-p", str(ports.nats)]
        args += ["-m", str(ports.nats_monitor)]
        if secured is not None:
            args += secured.server_args()
        return args, {"NATS_MONITOR_PORT": str(ports.nats_monitor)}
    keys = {"access": env["STORYPOST_S3_ACCESS_KEY"], "secret": env["STORYPOST_S3_SECRET_KEY"]}
    if upstream:
        # The official image's entrypoint runs `weed server`; it reads the identity from AWS_*.
        command = ["server", "-s3", "-filer", "-ip=127.0.0.1", f"-ip.bind={bind}"]
        command += ["-master.electionTimeout=1s", *_seaweed_port_flags(ports)]
        return command, {
            "AWS_ACCESS_KEY_ID": keys["access"],
            "AWS_SECRET_ACCESS_KEY": keys["secret"],
        }
    return _seaweed_port_flags(ports), {
        "S3_ACCESS_KEY": keys["access"],
        "S3_SECRET_KEY": keys["secret"],
        "SEAWEED_MASTER_PORT": str(ports.seaweed_master),
        "WEED_BIND": bind,
    }


def _published_ports(components: Collection[str], ports: StackPorts) -> list[int]:
    """Ports the host reaches: clients' and probes' (SeaweedFS's internal ones stay inside)."""
    wanted = {
        "mongo": [ports.mongo],
        "nats": [ports.nats, ports.nats_monitor],
        "s3": [ports.s3, ports.seaweed_master],
        "account": [ports.account, ports.account_metrics],
        "render": [ports.render, ports.render_metrics],
        "publish": [ports.publish, ports.publish_metrics],
        "webhook": [ports.webhook, ports.webhook_metrics],
        "sandbox": [ports.sandbox, ports.sandbox_metrics],
        "edge": [ports.edge, ports.edge_metrics],
    }
    return [port for component in components for port in wanted[component]]


def sweep_stale_runs(client: Any) -> int:
    """Removes containers and networks of earlier runs whose process is gone (a SIGKILL)."""
    removed = 0
    for container in client.containers.list(all=True, filters={"label": RUN_LABEL}):
        owner = int(container.labels.get(OWNER_LABEL, "0") or 0)
        if owner and _alive(owner):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True, v=True)
            removed += 1
    for network in client.networks.list(filters={"label": RUN_LABEL}):
        owner = int(network.attrs.get("Labels", {}).get(OWNER_LABEL, "0") or 0)
        if owner and _alive(owner):
            continue
        with contextlib.suppress(Exception):
            network.remove()
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_run(client: Any, run_id: str) -> None:
    """Force-removes every container and the network of one run (the last line of cleanup)."""
    selector = {"label": f"{RUN_LABEL}={run_id}"}
    for container in client.containers.list(all=True, filters=selector):
        with contextlib.suppress(Exception):
            container.remove(force=True, v=True)
    for network in client.networks.list(filters=selector):
        with contextlib.suppress(Exception):
            network.remove()


class ContainerStack(StackBase):
    """Chosen components of the stack as containers; the same interface as EmbeddedStack.

    `stop()` (also on a failed start, and at interpreter exit as a last resort) removes every
    container and the network it made.
    """

    def __init__(
        self,
        ports: StackPorts,
        *,
        components: Collection[str] | None = None,
        extra_env: Mapping[str, str] | None = None,
        log_level: str = "info",
        start_timeout: float | None = None,
        network: NetworkMode | None = None,
        replicas: int = 1,
        production: bool = False,
    ) -> None:
        super().__init__(ports, components)
        self.network: NetworkMode = network or network_mode()
        if replicas > 1 and self.network != "host":
            raise ValueError("replicas run on the host network only")
        # Every caller signs with a key of this run (storypost_runtime.service_auth).
        self._credentials = {name: ServiceCredential.generate(name) for name in CALLERS}
        # Replica → its (service or edge port, metrics port); the first replica of a
        # replicated component gets ports of its own too (the edge's port is the balancer's).
        self._members: dict[str, list[str]] = {name: [name] for name in self._selected}
        self._replica_ports: dict[str, tuple[int, int]] = {}
        if replicas > 1:
            for component in (c for c in REPLICATED if c in self._selected):
                names = [replica_name(component, r) for r in range(1, replicas + 1)]
                self._members[component] = names
                taken = {
                    *ports.as_dict().values(),
                    *(p for pair in self._replica_ports.values() for p in pair),
                }
                chosen_ports = free_ports(2 * len(names), avoid=taken)
                for n, name in enumerate(names):
                    self._replica_ports[name] = (chosen_ports[2 * n], chosen_ports[2 * n + 1])
        # The production shape's NATS requires a password and TLS, as production's does.
        self._secured_nats = SecuredNats.create() if production else None
        secured_env = {}
        if self._secured_nats is not None:
            secured_env = self._secured_nats.client_env(ports.nats)
            # Kept while the stack may start again; gone with the test process.
            atexit.register(self._secured_nats.remove)
        shaped = {
            **(production_env() if production else {}),
            **secured_env,
            **self._replica_addresses(),
        }
        self._env = stack_env(ports, log_level, {**shaped, **(extra_env or {})}, self._credentials)
        # Only the probes, limits and stop signals are used; the directory is never written.
        self._scratch = Path(tempfile.gettempdir()) / "storypost-containers-unused"
        self._specs: dict[str, ComponentSpec] = build_specs(
            self._scratch, ports, self._env, self._credentials
        )
        for name in self._replica_ports:
            self._specs[name] = self._replica_spec(name)
        self._balancer: BalancerThread | None = None
        self._start_timeout = start_timeout
        # Host network: loopback only, as the process stack; bridge: every address of the pod.
        self._bind = "127.0.0.1" if self.network == "host" else "0.0.0.0"
        self.run_id = uuid.uuid4().hex[:10]
        self._client: Any = None
        self._images: StackImages | None = None
        self._network: Any = None
        self._pod: Any = None
        self._containers: dict[str, Any] = {}
        self._atexit_registered = False

    # -- replicas ---------------------------------------------------------------------------

    def _replica_addresses(self) -> dict[str, str]:
        """Each replicated service's address: every replica, balanced round robin by callers."""
        found: dict[str, str] = {}
        for component in ("account", "render", "publish", "webhook"):
            names = self._members.get(component, [])
            if len(names) > 1:
                listed = ",".join(f"127.0.0.1:{self._replica_ports[n][0]}" for n in names)
                found[f"STORYPOST_{component.upper()}_ADDR"] = f"ipv4:{listed}"
        return found

    def _replica_spec(self, name: str) -> ComponentSpec:
        """The spec of one replica: its component's, on the replica's own ports."""
        base = self._specs[base_of(name)]
        port, metrics = self._replica_ports[name]
        if base_of(name) == "edge":
            env = {**base.env, "STORYPOST_EDGE_PORT": str(port)}
            probe = health.http_ok(f"http://127.0.0.1:{port}/readyz")
        else:
            env = {**base.env, "STORYPOST_GRPC_PORT": str(port)}
            probe = health.grpc_serving(f"127.0.0.1:{port}")
        env["STORYPOST_METRICS_PORT"] = str(metrics)
        return replace(base, name=name, env=env, listens_on=(port, metrics), probe=probe)

    def replicas(self, component: str) -> list[str]:
        """The replicas of a component (its own name alone when it runs once; none when this
        stack does not run it)."""
        return list(self._members.get(component, []))

    def metrics_ports(self, component: str) -> list[int]:
        """The metrics port of each replica of a replicated component."""
        return [self._replica_ports[name][1] for name in self.replicas(component)]

    def _targets(self, name: str) -> list[str]:
        """A component name means every replica of it; a replica name means that one."""
        return self._members.get(name, [name])

    # -- the EmbeddedStack-like interface (the rest is StackBase's) --------------------------

    @property
    def images(self) -> StackImages:
        if self._images is None:
            raise RuntimeError("the stack has not started")
        return self._images

    async def start(self) -> None:
        """Network, pod, then the components stage by stage; on any failure removes it all."""
        try:
            await asyncio.to_thread(self._prepare)
            for stage in STAGES:
                names = [name for name in stage if name in self._selected]
                migrating = [name for name in MIGRATED if name in names]
                if stage is SERVICES and migrating:
                    await asyncio.to_thread(self._migrate, migrating[0])
                async with asyncio.TaskGroup() as group:
                    for name in names:
                        group.create_task(self.start_component(name))
            edges = self._members.get("edge", [])
            if len(edges) > 1:
                backends = [Backend(self._replica_ports[name][0]) for name in edges]
                self._balancer = BalancerThread(backends, self._ports.edge)
                await asyncio.to_thread(self._balancer.start)
        except BaseException as error:
            await self._fail_start(error)

    async def stop(self) -> None:
        """Stops the components in reverse order (grace, then SIGKILL), removes everything."""
        if self._balancer is not None:
            await asyncio.to_thread(self._balancer.stop)
            self._balancer = None
        if self._client is None:
            return
        for stage in reversed(STAGES):
            running = [name for name in stage if name in self._containers]
            await asyncio.gather(
                *(self.stop_component(name) for name in running), return_exceptions=True
            )
        await asyncio.to_thread(self._teardown)

    async def start_component(self, component: str) -> None:
        """Creates (or starts again) a component's containers (each replica) and waits until
        they are healthy."""
        started = time.monotonic()
        async with asyncio.TaskGroup() as group:
            for name in self._targets(component):
                group.create_task(self._start_one(name))
        self._startup_seconds[component] = time.monotonic() - started

    async def _start_one(self, name: str) -> None:
        spec = self._spec(name)
        await asyncio.to_thread(self._run_container, name)
        await self._wait_healthy(spec)

    async def stop_component(self, component: str, grace: float | None = None) -> int | None:
        """`docker stop`: the image's stop signal, then SIGKILL after the grace; the exit code
        (of every replica: the first that is not 0)."""
        codes = await asyncio.gather(
            *(self._stop_one(name, grace) for name in self._targets(component))
        )
        return next((code for code in codes if code), codes[0] if codes else None)

    async def _stop_one(self, name: str, grace: float | None) -> int | None:
        spec = self._spec(name)
        container = self._containers.get(name)
        if container is None:
            return None
        seconds = spec.stop_grace if grace is None else grace
        await asyncio.to_thread(container.stop, timeout=max(1, round(seconds)))
        return await asyncio.to_thread(self._exit_code, container)

    async def restart(self, component: str) -> None:
        await self.stop_component(component)
        await self.start_component(component)

    async def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        """`docker kill --signal` (every replica of a component); waits for the containers to
        exit (unless the signal is mild)."""
        for name in self._targets(component):
            self._spec(name)
            container = self._containers.get(name)
            if container is None:
                raise StackError(name, "is not running")
            await asyncio.to_thread(container.kill, signal=int(sig))
            if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
                await asyncio.to_thread(container.wait, timeout=60)

    def exit_code(self, component: str) -> int | None:
        """The exit code of a component that has exited, else None."""
        container = self._containers.get(component)
        return None if container is None else self._exit_code(container)

    def logs(self, component: str, lines: int = 200) -> str:
        found = []
        for name in self._targets(component):
            container = self._containers.get(name)
            if container is not None:
                found.append(bytes(container.logs(tail=lines)).decode(errors="replace"))
        return "".join(found)

    def health_status(self, component: str) -> str | None:
        """Docker's own HEALTHCHECK verdict: starting, healthy, unhealthy (None: no check)."""
        container = self._containers[component]
        container.reload()
        verdict = container.attrs.get("State", {}).get("Health")
        return None if verdict is None else str(verdict.get("Status"))

    def container_name(self, component: str) -> str:
        return f"storypost-{self.run_id}-{component}"

    def pids(self) -> dict[str, int]:
        """Host process ids of the running components (their containers' main process)."""
        found: dict[str, int] = {}
        for name, container in self._containers.items():
            with contextlib.suppress(Exception):
                container.reload()
                pid = int(container.attrs["State"]["Pid"])
                if pid:
                    found[name] = pid
        return found

    # -- Docker work (blocking; run in threads) ---------------------------------------------

    def _prepare(self) -> None:
        from testcontainers.core.config import testcontainers_config

        # Ryuk's image cannot be pulled here; this class removes what it made itself.
        testcontainers_config.ryuk_disabled = True
        try:
            self._client = docker_client()
        except Exception as error:
            raise StackError("docker", f"no Docker engine answers: {error}") from None
        sweep_stale_runs(self._client)
        try:
            self._images = choose_images(self._client, self._selected, pod=self.network == "bridge")
        except Exception as error:
            raise StackError("images", str(error)) from None
        if not self._atexit_registered:
            atexit.register(self._last_resort)
            self._atexit_registered = True
        if self.network == "host":
            return
        labels = self._labels("network")
        self._network = self._client.networks.create(
            f"storypost-{self.run_id}", driver="bridge", labels=labels
        )
        self._pod = self._container(
            POD_IMAGE, "pod", ["sleep", "infinity"], {}, network=self._network.name
        )
        for port in _published_ports(self._selected, self._ports):
            # Loopback only, whatever the engine's default (docker-py takes (ip, port)).
            self._pod.ports[f"{port}/tcp"] = ("127.0.0.1", port)
        self._pod.start()

    def _labels(self, component: str) -> dict[str, str]:
        return {RUN_LABEL: self.run_id, OWNER_LABEL: str(os.getpid()), COMPONENT_LABEL: component}

    def _container(
        self,
        image: str,
        component: str,
        command: list[str],
        env: Mapping[str, str],
        **kwargs: Any,
    ) -> Any:
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(image).with_name(self.container_name(component))
        if command:
            container.with_command(command)
        for key, value in env.items():
            container.with_env(key, value)
        # testcontainers passes volumes itself: docker-py's mapping goes through it.
        for host, bind in kwargs.pop("volumes", {}).items():
            container.with_volume_mapping(host, bind["bind"], bind["mode"])
        # with_kwargs() replaces what it had: everything goes in one call.
        container.with_kwargs(labels=self._labels(component), **kwargs)
        return container

    def _run_container(self, component: str) -> None:
        existing = self._containers.get(component)
        if existing is not None:
            existing.reload()
            if existing.status == "running":
                raise StackError(component, "is already running")
            # Started again with its filesystem (data) intact, as a restarted process would be.
            existing.start()
            return
        image, command, env, kwargs = self._run_parts(component)
        definition = self._container(image, component, command, env, **kwargs)
        try:
            definition.start()
        except Exception as error:
            message = f"cannot start its container from {image}: {error}"
            raise StackError(component, message) from None
        self._containers[component] = definition.get_wrapped_container()

    def _run_parts(self, component: str) -> tuple[str, list[str], dict[str, str], dict[str, Any]]:
        """A component's image, command, environment and engine options."""
        base = base_of(component)
        image = self.images.by_component[base]
        # The process stack's per-component settings, less file paths on this host (images
        # keep their data under /data), then where to listen (a replica: its own ports).
        own = {k: v for k, v in self._specs[component].env.items() if str(self._scratch) not in v}
        where = (
            {} if component in self._replica_ports else _service_env(base, self._ports, self._bind)
        )
        env = {**self._env, **own, **where}
        command: list[str] = []
        if component in DEPENDENCIES:
            upstream = component in self.images.upstream
            command, extra = _dependency_run(
                component, upstream, self._ports, self._env, self._bind, self._secured_nats
            )
            env = {**extra}
        kwargs: dict[str, Any] = {"network_mode": "host"}
        if self._secured_nats is not None and component not in ("mongo", "s3"):
            kwargs["volumes"] = self._secured_nats.volumes()
        if self._pod is not None:
            kwargs["network_mode"] = f"container:{self._pod.get_wrapped_container().id}"
        if base == "render":
            kwargs["shm_size"] = _RENDER_SHM
            # The engine's default profile refuses the browser's jail (docs/render.md).
            kwargs["security_opt"] = [f"seccomp={render_seccomp_profile()}"]
        return image, command, env, kwargs

    def _migrate(self, component: str) -> None:
        """The migrate Job before the services start (docs/migrations.md): its command in a
        service's image (each holds every schema), with the stack's settings (the production
        shape's included)."""
        code, logs = self.run_once(
            component, {}, timeout=300.0, command=["python", "-m", "storypost_cli.migrate"]
        )
        if code != 0:
            tail = "\n".join(logs.splitlines()[-_LOG_TAIL_LINES:])
            raise StackError("migrate", f"exited with code {code}", tail)

    def run_once(
        self,
        component: str,
        changes: Mapping[str, str],
        timeout: float = 60.0,
        command: list[str] | None = None,
    ) -> tuple[int | None, str]:
        """Runs one more container of a component's image, its settings changed by `changes`,
        until it exits or `timeout` passes (then it is removed): its exit code (None: still
        running) and its output. What an operator sees who starts a replica with a wrong
        setting. `command` replaces the image's (the migrate Job's)."""
        image, own_command, env, kwargs = self._run_parts(component)
        name = f"{component}-once-{uuid.uuid4().hex[:6]}"
        container = self._client.containers.run(
            image,
            command or own_command or None,
            name=self.container_name(name),
            environment={**env, **changes},
            labels=self._labels(name),
            detach=True,
            **kwargs,
        )
        try:
            try:
                code: int | None = int(container.wait(timeout=timeout)["StatusCode"])
            except Exception:  # the engine's read timed out: still running
                code = None
            return code, bytes(container.logs()).decode(errors="replace")
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)

    def _exit_code(self, container: Any) -> int | None:
        container.reload()
        if container.status == "running":
            return None
        return int(container.attrs["State"]["ExitCode"])

    def _teardown(self) -> None:
        for container in list(self._containers.values()):
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
        self._containers.clear()
        if self._pod is not None:
            with contextlib.suppress(Exception):
                self._pod.get_wrapped_container().remove(force=True, v=True)
            self._pod = None
        if self._network is not None:
            with contextlib.suppress(Exception):
                self._network.remove()
            self._network = None
        if self._client is not None:
            remove_run(self._client, self.run_id)
            self._client.close()
            self._client = None

    def _last_resort(self) -> None:
        """At interpreter exit: nothing of this run may outlive the process."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._teardown()

    # -- health ---------------------------------------------------------------------------

    def _spec(self, component: str) -> ComponentSpec:
        if base_of(component) not in self._selected or component not in self._specs:
            raise ValueError(f"unknown component {component!r}; this stack runs {self._selected}")
        return self._specs[component]

    async def _wait_healthy(self, spec: ComponentSpec) -> None:
        loop = asyncio.get_running_loop()
        limit = self._start_timeout or spec.start_timeout
        deadline = loop.time() + limit
        reason = "no answer yet"
        container = self._containers[spec.name]
        while True:
            await asyncio.to_thread(container.reload)
            if container.status in ("exited", "dead"):
                code = container.attrs["State"]["ExitCode"]
                raise StackError(
                    spec.name,
                    f"container exited with code {code} during start-up",
                    self.logs(spec.name, _LOG_TAIL_LINES),
                )
            try:
                async with asyncio.timeout(_PROBE_LIMIT_SECONDS):
                    await spec.probe()
                return
            except Exception as error:
                reason = f"{type(error).__name__}: {error}"[:300]
            if loop.time() >= deadline:
                message = f"not healthy after {limit:g} s (last probe: {reason})"
                raise StackError(spec.name, message, self.logs(spec.name, _LOG_TAIL_LINES))
            await asyncio.sleep(_POLL_SECONDS)
