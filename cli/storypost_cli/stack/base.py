"""What the process stack and the container stack (storypost.testing) share: the chosen
components, ports, callers' credentials and client environment, and `async with` to start and
stop one. Tests and the dev launcher use either through this one interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from types import TracebackType
from typing import NoReturn, Self

from storypost_cli.stack.components import COMPONENTS, Credentials, caller_env, client_env
from storypost_cli.stack.errors import StackError
from storypost_cli.stack.ports import StackPorts


class StackBase(ABC):
    """`components` picks a subset of COMPONENTS (e.g. only the dependencies for tests).

    A subclass sets `_credentials` and `_env` (the stack environment, see `stack_env`) in its
    own `__init__` and fills `_startup_seconds` as components become healthy.
    """

    _credentials: Credentials
    _env: dict[str, str]

    def __init__(self, ports: StackPorts, components: Collection[str] | None) -> None:
        chosen = set(COMPONENTS if components is None else components)
        unknown = chosen - set(COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; known: {list(COMPONENTS)}")
        self._ports = ports
        self._selected = tuple(name for name in COMPONENTS if name in chosen)
        self._startup_seconds: dict[str, float] = {}

    @property
    def ports(self) -> StackPorts:
        return self._ports

    @property
    def components(self) -> tuple[str, ...]:
        """The components this stack starts, in start order."""
        return self._selected

    @property
    def edge_url(self) -> str:
        return f"http://127.0.0.1:{self._ports.edge}"

    @property
    def startup_seconds(self) -> Mapping[str, float]:
        """Seconds from start to healthy, per component, for the latest start of each."""
        return dict(self._startup_seconds)

    def credentials(self) -> dict[str, str]:
        """Every caller's signing credential (`name:key`) by name, for tests acting as one."""
        return {name: credential.secret() for name, credential in self._credentials.items()}

    def env(self) -> dict[str, str]:
        """The STORYPOST_* environment a client of this stack uses (it signs as the operator)."""
        return client_env(self._env, self._credentials)

    def component_env(self, component: str) -> dict[str, str]:
        """The environment of one more replica of `component` (it signs as that component, as
        the stack's own does: signed as the operator, a publish-svc is refused its calls)."""
        return {**self._env, **caller_env(component, self._credentials)}

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _fail_start(self, error: BaseException) -> NoReturn:
        """Stops what a failed start started and raises why it failed: the first StackError
        of a task group's error (else its first error) rather than the group."""
        await self.stop()
        if isinstance(error, BaseExceptionGroup):
            leaf: BaseException = error.subgroup(StackError) or error
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            raise leaf from None
        raise error
