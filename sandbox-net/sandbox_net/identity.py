"""Who lives on the sandbox platforms: usernames, deterministic account ids, platform names."""

from __future__ import annotations

import hashlib
import re

from storypost_runtime.vocabulary import PLATFORM_KEYS, SOCIAL_API_PLATFORMS

# Path keys of the platforms (lower case); their uppercase names are the keys upper-cased.
PLATFORMS = PLATFORM_KEYS
SOCIAL_PLATFORMS = tuple(p.key for p in SOCIAL_API_PLATFORMS)
USERNAME = re.compile(r"^[a-z0-9._]{1,30}$")
# Usernames starting with this do not exist on photoapp (to test "unknown user").
UNKNOWN_PREFIX = "unknown"

_ID_SHAPE = {"photoapp": ("1784", 17), "clipapp": ("7", 19)}


def normalize_username(username: str) -> str | None:
    """Lower case, without a leading "@"; None when it is not a valid handle."""
    name = username.strip().removeprefix("@").lower()
    return name if USERNAME.match(name) else None


def account_id(platform: str, username: str) -> str:
    """The same username always has the same numeric id, also after a restart."""
    prefix, length = _ID_SHAPE.get(platform, ("9", 15))
    digest = int.from_bytes(hashlib.sha256(f"{platform}:{username}".encode()).digest()[:12])
    digits = str(digest).rjust(length, "0")
    return prefix + digits[-(length - len(prefix)) :]


def user_exists(username: str) -> bool:
    """Any valid handle exists except those starting with `unknown`."""
    return not username.startswith(UNKNOWN_PREFIX)
