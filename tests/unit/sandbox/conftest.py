"""The sandbox network in process, with no media fetched and images processed at once."""

from __future__ import annotations

from collections.abc import Iterator

import falcon.testing
import pytest

from sandbox_net.app import Sandbox, create_sandbox
from sandbox_net.config import SandboxSettings


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    built = create_sandbox(SandboxSettings(fetch_media=False, image_processing_seconds=0))
    yield built
    built.processor.close()


@pytest.fixture
def client(sandbox: Sandbox) -> falcon.testing.TestClient:
    return falcon.testing.TestClient(sandbox.app)
