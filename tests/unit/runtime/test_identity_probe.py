"""The start-time probe of a component's signed identity (storypost_runtime.identity_probe):
a refusal of the caller stops the start naming the setting; any other answer, or none in
time, lets it go on."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from storypost_runtime.identity_probe import IdentityRefused, refuse_refused_identity
from storypost_runtime.settings import SettingRefused


def _error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED]
)
async def test_a_refused_caller_stops_the_start_naming_the_setting(code: grpc.StatusCode) -> None:
    async def probe() -> None:
        raise _error(code, "admin may not call CheckAccounts")

    with pytest.raises(IdentityRefused) as refused:
        await refuse_refused_identity("account-svc", probe)
    message = str(refused.value)
    assert isinstance(refused.value, SettingRefused)  # exit 2 at start, as for bad settings
    assert message.startswith("account-svc refuses this component's identity")
    assert code.name in message and "admin may not call CheckAccounts" in message
    assert "STORYPOST_SERVICE_KEY" in message and "STORYPOST_SERVICE_PUBLIC_KEYS" in message


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    ],
)
async def test_any_other_answer_lets_the_start_go_on(code: grpc.StatusCode) -> None:
    async def probe() -> None:
        raise _error(code, "whatever")

    await refuse_refused_identity("render-svc", probe)


async def test_an_accepted_call_and_a_silent_dependency_let_the_start_go_on() -> None:
    calls: list[str] = []

    async def answers() -> None:
        calls.append("answered")

    async def silent() -> None:
        calls.append("waiting")
        await asyncio.sleep(60)

    await refuse_refused_identity("account-svc", answers)
    await asyncio.wait_for(refuse_refused_identity("account-svc", silent, within_seconds=0.1), 5)
    assert calls == ["answered", "waiting"]
