"""Which mongoeco release the patches are written for, checked before any is applied."""

from __future__ import annotations

import importlib.metadata

# The mongoeco release whose private internals the patches below were written and tested
# against. pyproject.toml pins exactly this one (`embedded` extra, requirements.lock); any
# other version is refused at start, before a patch could misfire on code that moved.
MONGOECO_VERSION = "4.11.0"


class MongoecoVersionError(RuntimeError):
    """The installed mongoeco is not the version the patches were written for."""


def check_mongoeco_version(found: str | None = None) -> str:
    """Returns the installed mongoeco version; raises MongoecoVersionError unless it is
    exactly MONGOECO_VERSION."""
    if found is None:
        try:
            found = importlib.metadata.version("mongoeco")
        except importlib.metadata.PackageNotFoundError:
            raise MongoecoVersionError(
                f"embedded mongo needs mongoeco {MONGOECO_VERSION}, and none is installed: "
                "run `make venv` (it installs requirements.lock) or "
                f"`pip install 'mongoeco[wire]=={MONGOECO_VERSION}'`"
            ) from None
    if found != MONGOECO_VERSION:
        raise MongoecoVersionError(
            f"embedded mongo needs mongoeco {MONGOECO_VERSION} exactly, found {found}: "
            "storypost_cli.embedded_mongo patches mongoeco's internals as they are in "
            f"{MONGOECO_VERSION}. Install that version (`make venv` installs requirements.lock, "
            f"or `pip install 'mongoeco[wire]=={MONGOECO_VERSION}'`); to move to {found}, check "
            "every patch against it (tests/unit/cli/test_embedded_mongo.py), then raise "
            "MONGOECO_VERSION and the pin in pyproject.toml together and run `make lock`."
        )
    return found
