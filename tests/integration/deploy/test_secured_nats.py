"""Issue #52 item 3: the production shape's NATS requires a password and TLS, as production's
does (storypost.testing.secured_nats). Every component of the run reached it (the stack is up
and its tests publish); here, from outside: a client without the identity, or without TLS, is
refused; the stack's identity over TLS reads the events stream; and a publish-svc started with
a wrong password stops at start with exit 2, naming the variable and never its value."""

from __future__ import annotations

import asyncio
import ssl

import nats
import pytest
from nats.errors import NoServersError

from storypost.testing.stack import StackHandle

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def production_shape(storypost_stack: StackHandle) -> None:
    if storypost_stack.mode != "production":
        pytest.skip("runs against the production shape (STORYPOST_TEST_STACK=production)")


async def refused(**options: object) -> str:
    """Connects once; the error NATS (or the handshake) answered."""
    errors: list[str] = []

    async def on_error(error: Exception) -> None:
        errors.append(str(error) or type(error).__name__)

    try:
        client = await nats.connect(
            connect_timeout=2, max_reconnect_attempts=0, allow_reconnect=False,
            error_cb=on_error, **options,  # type: ignore[arg-type]
        )  # fmt: skip
    except (NoServersError, OSError, TimeoutError, ssl.SSLError, nats.errors.Error) as error:
        return " | ".join([*errors, str(error) or type(error).__name__])
    await client.close()
    raise AssertionError(f"NATS admitted {sorted(options)}")


async def test_nats_refuses_a_client_without_the_identity_or_without_tls(
    storypost_stack: StackHandle,
) -> None:
    options = storypost_stack.nats_options()
    url = options["servers"][0]
    assert url.startswith("tls://")
    plain = url.replace("tls://", "nats://")
    # No TLS at all: the server requires it.
    await refused(servers=[plain])
    # TLS, the right CA, no password: authorization violation.
    said = await refused(servers=[url], tls=options["tls"])
    assert "authorization" in said.lower(), said
    # The right password over TLS with a CA that did not sign the server: the handshake fails.
    wrong_ca = ssl.create_default_context()
    await refused(servers=[url], tls=wrong_ca, user=options["user"], password=options["password"])
    # The stack's identity over TLS: admitted, and the events stream is there.
    client = await nats.connect(**options)
    try:
        stream = storypost_stack.env.get("STORYPOST_NATS_STREAM", "STORYPOST_EVENTS")
        info = await client.jetstream().stream_info(stream)
        assert info.config.name == stream
    finally:
        await client.close()


async def test_a_wrong_password_stops_publish_svc_at_start_naming_the_variable(
    storypost_stack: StackHandle,
) -> None:
    containers = storypost_stack.processes.containers
    assert containers is not None
    wrong = "not-the-password-" + "x" * 8
    code, output = await asyncio.to_thread(
        containers.run_once, "publish", {"STORYPOST_NATS_PASSWORD": wrong}, 90.0
    )
    assert code == 2, output[-2000:]
    assert "STORYPOST_NATS_PASSWORD" in output and "STORYPOST_NATS_USER" in output, output[-2000:]
    assert wrong not in output
