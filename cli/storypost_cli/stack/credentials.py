"""The embedded stack's caller credentials: one signing key per caller, kept in the data dir.

Every component that calls another signs its calls (storypost_runtime.service_auth); the
servers get every caller's public key. The keys are made on the first start and kept in
`service-keys.json` (owner-only), so a `storypost admin` in another terminal signs as the
operator of the stack that runs (`admin_credential`) and restarts keep the same identities.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from storypost_runtime.service_auth import (
    ADMIN,
    CALLERS,
    EDGE,
    PUBLISH_SVC,
    RENDER_SVC,
    ServiceCredential,
)

KEYS_FILE = "service-keys.json"
# The component of the embedded stack that signs as each caller (the rest call nobody).
CALLER_OF_COMPONENT = {"edge": EDGE, "publish": PUBLISH_SVC, "render": RENDER_SVC}


def stack_credentials(data_dir: Path) -> dict[str, ServiceCredential]:
    """Every caller's credential: read from `data_dir`, or made and written there."""
    path = data_dir / KEYS_FILE
    stored = _read(path)
    if stored is not None and set(stored) == set(CALLERS):
        return stored
    credentials = {name: ServiceCredential.generate(name) for name in CALLERS}
    data_dir.mkdir(parents=True, exist_ok=True)
    # Owner-only from the first byte: the file holds private keys.
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({name: c.secret() for name, c in credentials.items()}, out)
    partial.replace(path)
    return credentials


def admin_credential(data_dir: Path) -> str | None:
    """The operator credential of the stack kept in `data_dir`, if one was started there."""
    stored = _read(data_dir / KEYS_FILE)
    return stored[ADMIN].secret() if stored and ADMIN in stored else None


def _read(path: Path) -> dict[str, ServiceCredential] | None:
    try:
        raw = json.loads(path.read_text())
        return {name: ServiceCredential.parse(value, str(path)) for name, value in raw.items()}
    except (OSError, ValueError, AttributeError):
        return None
