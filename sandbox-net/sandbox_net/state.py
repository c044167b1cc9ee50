"""The sandbox's state: accounts, codes, containers, posts, switches; one lock, optional file."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from sandbox_net.config import SandboxSettings
from sandbox_net.identity import account_id as derive_account_id
from sandbox_net.switches import Switch, switch_key
from storypost_runtime.documents import camel_case
from storypost_runtime.logs import get_logger
from storypost_runtime.vocabulary import CLIPAPP_PRIVACY_LEVELS

log = get_logger(__name__)
Record = dict[str, Any]
STATE_FILE = "sandbox-state.json"


@dataclass
class RuntimeConfig:
    """Knobs tests change at run time (PUT /_sandbox/config)."""

    access_token_seconds: int
    refresh_token_seconds: int
    image_processing_seconds: float
    video_processing_seconds: float
    container_ttl_seconds: float
    photoapp_publish_limit: int
    fetch_media: bool
    insights_step_seconds: float
    story_lifetime_seconds: float

    @classmethod
    def from_settings(cls, settings: SandboxSettings) -> RuntimeConfig:
        """Each knob starts as the setting of the same name."""
        return cls(**{knob.name: getattr(settings, knob.name) for knob in fields(cls)})

    def to_json(self) -> dict[str, Any]:
        return {camel_case(k): v for k, v in asdict(self).items()}

    def update(self, changes: dict[str, Any]) -> list[str]:
        """Applies known camelCase keys; returns the unknown ones."""
        by_camel = {camel_case(f.name): f for f in fields(self)}
        unknown = [key for key in changes if key not in by_camel]
        for key, value in changes.items():
            if key in by_camel:
                current = getattr(self, by_camel[key].name)
                setattr(self, by_camel[key].name, type(current)(value))
        return unknown


def default_creator_settings() -> Record:
    return {
        "privacy_level_options": list(CLIPAPP_PRIVACY_LEVELS),
        "comment_disabled": False,
        "duet_disabled": False,
        "stitch_disabled": False,
        "max_video_post_duration_sec": 600,
    }


class Store:
    """Everything the sandbox knows. Callers hold `lock` while they read and change records."""

    def __init__(self, config: RuntimeConfig, data_dir: Path | None = None) -> None:
        self.lock = threading.RLock()
        self.config = config
        # "<platform>:<account id>" -> account record.
        self.accounts: dict[str, Record] = {}
        # Authorization codes (one use, ten minutes): never saved.
        self.codes: dict[str, Record] = {}
        # photoapp media containers, clipapp publish jobs, other platforms' posts, by id.
        self.containers: dict[str, Record] = {}
        self.clip_publishes: dict[str, Record] = {}
        self.posts: dict[str, Record] = {}
        # "<platform>:<account id>:<Idempotency-Key>" -> post id.
        self.idempotency: dict[str, str] = {}
        # Everything published, in order, with every field received.
        self.published: list[Record] = []
        self.switches: dict[str, Switch] = {}
        self._path = data_dir / STATE_FILE if data_dir else None
        self._dirty = threading.Event()
        self._counter = 0

    # -- ids -------------------------------------------------------------------------------
    def next_number(self) -> int:
        with self.lock:
            self._counter += 1
            return self._counter

    # -- accounts --------------------------------------------------------------------------
    def account(self, platform: str, account_id: str) -> Record | None:
        return self.accounts.get(f"{platform}:{account_id}")

    def ensure_account(
        self, platform: str, username: str, display_name: str | None = None
    ) -> Record:
        """The account of a username, created on first sight (ids derive from usernames)."""
        with self.lock:
            account_id = derive_account_id(platform, username)
            key = f"{platform}:{account_id}"
            record = self.accounts.get(key)
            if record is None:
                record = {
                    "platform": platform,
                    "id": account_id,
                    "username": username,
                    "displayName": display_name or username,
                    "linknetDestinations": [],
                    "createdAt": time.time(),
                }
                if platform == "clipapp":
                    record["creator"] = default_creator_settings()
                self.accounts[key] = record
            elif display_name:
                record["displayName"] = display_name
            self.touch()
            return record

    def resolve_account_id(self, platform: str, account: str) -> str:
        """An account given by id or by username (switches and filters take either)."""
        name = account.strip().removeprefix("@")
        with self.lock:
            if f"{platform}:{name}" in self.accounts:
                return name
            for record in self.accounts.values():
                if record["platform"] == platform and record["username"] == name.lower():
                    return str(record["id"])
        return name if name.isdigit() else derive_account_id(platform, name.lower())

    # -- switches --------------------------------------------------------------------------
    def switch_for(
        self, platform: str, account_id: str | None, path: str | None = None
    ) -> Switch | None:
        """The most specific switch for a call: the account's for this endpoint, the account's,
        the platform's for this endpoint, the platform's."""
        with self.lock:
            owners = [account_id, None] if account_id else [None]
            for owner in owners:
                for switch in self.switches.values():
                    if (
                        switch.platform == platform
                        and switch.account_id == owner
                        and switch.endpoint is not None
                        and switch.applies_to(path)
                    ):
                        return switch
                found = self.switches.get(switch_key(platform, owner))
                if found is not None:
                    return found
            return None

    def take_switch(
        self, platform: str, account_id: str | None, path: str | None = None
    ) -> Switch | None:
        """The switch for a call (as `switch_for`), counting the call against its `times`."""
        with self.lock:
            switch = self.switch_for(platform, account_id, path)
            if switch is not None and switch.times is not None:
                left = switch.used_once()
                if left is None:
                    del self.switches[switch.key()]
                else:
                    self.switches[switch.key()] = left
                self.touch()
            return switch

    def set_switch(self, switch: Switch) -> None:
        with self.lock:
            if switch.mode == "ok" and switch.account_id is None:
                self.switches.pop(switch.key(), None)
            else:
                # An account-level "ok" is kept: it overrides a platform-wide switch.
                self.switches[switch.key()] = switch
            self.touch()

    def reset_switches(self, platform: str | None, account_id: str | None = None) -> int:
        """Removes every switch, a platform's (and its accounts'), or one account's (each with
        its endpoint switches)."""
        with self.lock:
            doomed = [
                key
                for key, s in self.switches.items()
                if platform in (None, s.platform)
                and (not (account_id and platform) or s.account_id == account_id)
            ]
            for key in doomed:
                del self.switches[key]
            self.touch()
            return len(doomed)

    # -- persistence -----------------------------------------------------------------------
    def touch(self) -> None:
        self._dirty.set()

    def load(self) -> None:
        if self._path is None or not self._path.is_file():
            return
        data = json.loads(self._path.read_text())
        with self.lock:
            self.accounts = data.get("accounts", {})
            self.containers = data.get("containers", {})
            self.clip_publishes = data.get("clipPublishes", {})
            self.posts = data.get("posts", {})
            self.idempotency = data.get("idempotency", {})
            self.published = data.get("published", [])
            self.switches = {
                s.key(): s for s in (Switch.from_json(raw) for raw in data.get("switches", []))
            }
            self._counter = int(data.get("counter", 0))
            self.config.update(data.get("config", {}))
            # Processing that was under way when the process stopped never finishes.
            for container in self.containers.values():
                if container["statusCode"] == "IN_PROGRESS":
                    container["statusCode"] = "ERROR"
                    container["status"] = "processing was interrupted by a restart"
            for job in self.clip_publishes.values():
                if job["status"] == "PROCESSING_DOWNLOAD":
                    job["status"], job["failReason"] = "FAILED", "internal_error"
                    job["failMessage"] = "processing was interrupted by a restart"
        log.info("state loaded", path=str(self._path), published=len(self.published))

    def save(self) -> None:
        if self._path is None:
            return
        with self.lock:
            self._dirty.clear()
            text = json.dumps(
                {
                    "accounts": self.accounts,
                    "containers": self.containers,
                    "clipPublishes": self.clip_publishes,
                    "posts": self.posts,
                    "idempotency": self.idempotency,
                    "published": self.published,
                    "switches": [s.to_json() for s in self.switches.values()],
                    "counter": self._counter,
                    "config": self.config.to_json(),
                }
            )
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        temporary.write_text(text)
        temporary.replace(self._path)

    def run_saver(self, stopping: threading.Event, interval: float = 0.5) -> None:
        """Writes the file at most every `interval` seconds while something changed."""
        while not stopping.is_set():
            if self._dirty.wait(timeout=interval) and not stopping.is_set():
                try:
                    self.save()
                except OSError as error:
                    log.warning("cannot save the state", path=str(self._path), error=str(error))
                stopping.wait(interval)

    @contextlib.contextmanager
    def locked(self) -> Iterator[Store]:
        with self.lock:
            yield self
