"""The caller's saved login: base URL and token in a 0600 JSON file in the user's config."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_ENV = "STORYPOST_CONFIG"
BASE_URL_ENV = "STORYPOST_BASE_URL"
TOKEN_ENV = "STORYPOST_API_TOKEN"  # noqa: S105 - the variable's name, not a token


@dataclass(frozen=True)
class Login:
    base_url: str
    token: str = field(repr=False)


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """$STORYPOST_CONFIG, else $XDG_CONFIG_HOME/storypost/config.json, else ~/.config/…."""
    env = os.environ if env is None else env
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    root = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return root / "storypost" / "config.json"


def load(path: Path) -> Login | None:
    """The saved login, or None when there is none (or the file is not ours)."""
    try:
        mode = path.stat().st_mode
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # Someone loosened the permissions: the token may have leaked. Say so, keep working.
        print(f"storypost: warning: {path} is readable by others; chmod 600 it", file=sys.stderr)
    if not isinstance(data, dict):
        return None
    base_url, token = data.get("baseUrl"), data.get("token")
    if isinstance(base_url, str) and isinstance(token, str) and base_url and token:
        return Login(base_url, token)
    return None


def save(path: Path, login: Login) -> None:
    """Writes the login atomically; the file is 0600 and its folder 0700 from the start."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = json.dumps({"baseUrl": login.base_url, "token": login.token}, indent=2) + "\n"
    # mkstemp creates the file with mode 0600, so the token is never readable by others.
    fd, temporary = tempfile.mkstemp(prefix=".config-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as file:
            file.write(text)
        Path(temporary).chmod(0o600)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def forget(path: Path) -> bool:
    """Deletes the saved login; True when there was one."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def resolve(base_url: str | None, env: Mapping[str, str], path: Path) -> Login | None:
    """The login to use: --base-url and $STORYPOST_API_TOKEN / $STORYPOST_BASE_URL override
    the saved one."""
    saved = load(path)
    url = base_url or env.get(BASE_URL_ENV) or (saved.base_url if saved else None)
    token = env.get(TOKEN_ENV) or (saved.token if saved else None)
    if not url or not token:
        return None
    return Login(url, token)
