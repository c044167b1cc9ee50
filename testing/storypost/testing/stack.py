"""A running storypost stack for tests: local processes, or containers of our images.

`processes` (default): the services as local processes on loopback, their dependencies from
containers where Docker answers and the images exist (`deps="auto"`), else the embedded
processes. `containers`: every component a container of our images (see containers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from storypost.testing.containers import ContainerStack, base_of
from storypost.testing.dependencies import DEPENDENCIES, DepsMode, StackMode, docker_answers
from storypost_cli.stack import COMPONENTS, EmbeddedStack, StackError, StackPorts
from storypost_cli.stack.base import StackBase
from storypost_runtime.component import component

_EXIT_LINE = re.compile(r"^=== \S+ (\S+) exited with code (-?\d+)$", re.MULTILINE)


@component
class Components:
    """Stops, kills and starts single components of a running stack, wherever they run."""

    processes: EmbeddedStack | None = None
    # The container stack (None when every component is a local process).
    containers: ContainerStack | None = None

    @property
    def components(self) -> tuple[str, ...]:
        """Every component of the stack, in start order."""
        running = set(self.processes.components if self.processes else ())
        running |= set(self.containers.components if self.containers else ())
        return tuple(name for name in COMPONENTS if name in running)

    def runs_in_container(self, component: str) -> bool:
        """Also for one replica of a component (`account-2`) in the production shape."""
        return self.containers is not None and base_of(component) in self.containers.components

    async def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` (a crash by default) and waits for the component to exit."""
        if self.runs_in_container(component):
            assert self.containers is not None
            await self.containers.kill(component, sig)
        else:
            await self._process_stack(component).kill(component, sig)

    async def start_component(self, component: str) -> None:
        """Starts a stopped or killed component again and waits until it is healthy."""
        if self.runs_in_container(component):
            assert self.containers is not None
            await self.containers.start_component(component)
        else:
            await self._process_stack(component).start_component(component)

    async def restart(self, component: str) -> None:
        await self.stop_component(component)
        await self.start_component(component)

    async def stop_component(self, component: str, grace: float = 30.0) -> int | None:
        """A graceful stop (its stop signal; SIGKILL after `grace` s); returns the exit code."""
        if self.runs_in_container(component):
            assert self.containers is not None
            return await self.containers.stop_component(component, grace)
        stack = self._process_stack(component)
        # nats-server exits 0 on SIGINT; everything of ours stops on SIGTERM.
        sig = signal.SIGINT if component == "nats" else signal.SIGTERM
        try:
            await asyncio.wait_for(stack.kill(component, sig), grace)
        except TimeoutError:
            await stack.kill(component, signal.SIGKILL)
        return last_exit_code(stack.log_path(component), component)

    def logs(self, component: str, lines: int = 200) -> str:
        """The component's latest output (its log file, or `docker logs`)."""
        if self.runs_in_container(component):
            assert self.containers is not None
            return self.containers.logs(component, lines)
        path = self._process_stack(component).log_path(component)
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def pids(self) -> dict[str, int]:
        found = dict(self.processes.pids()) if self.processes else {}
        if self.containers:
            found.update(self.containers.pids())
        return found

    def _process_stack(self, component: str) -> EmbeddedStack:
        if self.processes is None or component not in self.processes.components:
            raise ValueError(f"unknown component {component!r}; this stack runs {self.components}")
        return self.processes


def last_exit_code(log_path: Path, component: str) -> int | None:
    """The exit code the supervisor wrote last for `component` in its log."""
    if not log_path.exists():
        return None
    codes = [int(m.group(2)) for m in _EXIT_LINE.finditer(log_path.read_text(errors="replace"))]
    return codes[-1] if codes else None


def stack_channel(env: Mapping[str, str], service: str, timeout: float = 10.0) -> grpc.aio.Channel:
    """A channel to `account`, `render`, `publish` or `webhook` of the stack whose client
    environment is `env`: its calls are signed as the stack's operator, whom every service
    answers (see docs/testing.md)."""
    from storypost_runtime.grpc_client import aio_channel
    from storypost_runtime.service_auth import caller_signer

    address = env[f"STORYPOST_{service.upper()}_ADDR"]
    # A test's call waits (within its deadline) for a service another test just restarted.
    signer = caller_signer(env.get("STORYPOST_SERVICE_KEY", ""))
    return aio_channel(address, timeout, signer, wait_for_ready=True)


@dataclass(frozen=True)
class Organization:
    """An organization with an API token, made through account-svc for a test."""

    organization_id: str
    token: str
    base_url: str


@dataclass(frozen=True)
class StackHandle:
    """What a test needs to reach the stack."""

    edge_url: str
    # STORYPOST_* settings of the stack (addresses of every service and dependency, reachable
    # from the test process on 127.0.0.1 in both modes).
    env: dict[str, str]
    # Stop, kill and start single components (the name is kept from the process-only days).
    processes: Components
    # "embedded", or the images of the containers used.
    dependencies: str
    ports: StackPorts
    # "processes", "containers" or "production" (the production shape).
    mode: StackMode = "processes"
    # Every caller's signing credential (`name:key`) by name: a test may call as any of them.
    credentials: Mapping[str, str] = field(default_factory=dict)

    @property
    def account_addr(self) -> str:
        return self.env["STORYPOST_ACCOUNT_ADDR"]

    def channel(
        self, service: str, timeout: float = 10.0, caller: str | None = None
    ) -> grpc.aio.Channel:
        """A channel to `account`, `render`, `publish` or `webhook` of this stack, signed as
        the operator or as `caller` (e.g. "publish-svc" for what only publish-svc may call)."""
        env = self.env
        if caller is not None:
            env = {**env, "STORYPOST_SERVICE_KEY": self.credentials[caller]}
        return stack_channel(env, service, timeout)

    def base_url(self, organization_id: str) -> str:
        return f"{self.edge_url}/o/{organization_id}/api/v1"

    def nats_options(self) -> dict[str, Any]:
        """`nats.connect(**stack.nats_options())`: the stack's NATS with the identity and TLS
        its components use (the production shape requires both)."""
        from storypost_runtime.bus import connect_options
        from storypost_runtime.settings import NatsSettings

        given = {
            key.removeprefix("STORYPOST_").lower(): value
            for key, value in self.env.items()
            if key.startswith("STORYPOST_NATS_")
        }
        settings = NatsSettings.model_validate(given)
        return {"servers": [settings.nats_url], **connect_options(settings)}

    def metrics_urls(self, component: str) -> list[str]:
        """The Prometheus endpoint of each replica of a component (one unless the stack runs
        in the production shape)."""
        containers = self.processes.containers
        if containers is None or len(containers.replicas(component)) < 2:
            return [self._metrics_url(component)]
        return [f"http://127.0.0.1:{port}/metrics" for port in containers.metrics_ports(component)]

    def metrics_url(self, component: str) -> str:
        """The Prometheus endpoint of a component (its first replica in the production shape)."""
        return self.metrics_urls(component)[0]

    def _metrics_url(self, component: str) -> str:
        """The Prometheus endpoint of the edge, a service or the sandbox network."""
        port = getattr(self.ports, f"{component}_metrics", None)
        if port is None:
            raise ValueError(f"{component!r} has no metrics endpoint")
        return f"http://127.0.0.1:{port}/metrics"

    async def new_organization(self, name: str = "test org") -> Organization:
        """A fresh organization and an API token for it (what `storypost admin` does)."""
        from storypost.account.v1 import account_pb2, account_pb2_grpc

        async with self.channel("account") as channel:
            accounts = account_pb2_grpc.AccountServiceStub(channel)
            org = await accounts.CreateOrganization(
                account_pb2.CreateOrganizationRequest(name=name)
            )
            issued = await accounts.CreateApiCredential(
                account_pb2.CreateApiCredentialRequest(
                    organization_id=org.organization_id, name="storypost.testing"
                )
            )
        return Organization(org.organization_id, issued.token, self.base_url(org.organization_id))


@contextlib.asynccontextmanager
async def running_stack(
    data_dir: Path,
    *,
    stack: StackMode = "processes",
    deps: DepsMode = "auto",
    extra_env: Mapping[str, str] | None = None,
    log_level: str = "info",
) -> AsyncIterator[StackHandle]:
    """Starts the whole stack and removes it (containers and network included) however the
    block ends: a failed test, an error during start-up, Ctrl-C."""
    env = dict(extra_env or {})
    ports = StackPorts.free()
    if stack in ("containers", "production"):
        started = _all_in_containers(ports, env, log_level, stack)
    else:
        started = _local_processes(data_dir, ports, env, log_level, deps)
    async with started as handle:
        yield handle


@contextlib.asynccontextmanager
async def _all_in_containers(
    ports: StackPorts, env: dict[str, str], log_level: str, mode: StackMode
) -> AsyncIterator[StackHandle]:
    """Every component a container of our images; the production shape runs two replicas of
    each service and of the edge."""
    shaped = mode == "production"
    everything = ContainerStack(
        ports, extra_env=env, log_level=log_level, replicas=2 if shaped else 1, production=shaped
    )
    async with everything:
        components = Components(containers=everything)
        yield _handle(everything, components, everything.images.describe(), mode)


@contextlib.asynccontextmanager
async def _local_processes(
    data_dir: Path, ports: StackPorts, env: dict[str, str], log_level: str, deps: DepsMode
) -> AsyncIterator[StackHandle]:
    """The services as local processes; their dependencies as containers where `deps` and
    Docker allow, else as embedded processes too."""
    async with contextlib.AsyncExitStack() as exits:
        containers = await _dependency_containers(exits, ports, env, log_level, deps)
        components = COMPONENTS
        if containers is not None:
            components = tuple(c for c in COMPONENTS if c not in DEPENDENCIES)
        processes = EmbeddedStack(
            data_dir, ports, components=components, extra_env=env, log_level=log_level
        )
        await exits.enter_async_context(processes)
        description = "embedded" if containers is None else containers.images.describe()
        both = Components(processes=processes, containers=containers)
        yield _handle(processes, both, description, "processes")


async def _dependency_containers(
    exits: contextlib.AsyncExitStack,
    ports: StackPorts,
    env: dict[str, str],
    log_level: str,
    deps: DepsMode,
) -> ContainerStack | None:
    """The dependencies started as containers (removed when `exits` closes); None where they
    run as embedded processes: asked for, Docker not answering, or (unless containers were
    demanded) the containers failing to start."""
    if not (deps == "containers" or (deps == "auto" and docker_answers())):
        return None
    candidate = ContainerStack(ports, components=DEPENDENCIES, extra_env=env, log_level=log_level)
    try:
        await exits.enter_async_context(candidate)
    except StackError as error:
        if deps == "containers":
            raise
        print(
            f"storypost.testing: dependency containers unavailable ({error});"
            " using local processes",
            file=sys.stderr,
        )
        return None
    return candidate


def _handle(
    stack: StackBase, components: Components, dependencies: str, mode: StackMode
) -> StackHandle:
    return StackHandle(
        stack.edge_url,
        stack.env(),
        components,
        dependencies,
        stack.ports,
        mode,
        stack.credentials(),
    )
