"""Answers held back by a `late-answer` switch: listed while held, released on demand.

A call the platform performed whose answer is held is what a caller that dies meanwhile
never learns about; tests wait until it is listed, kill the caller, then release the hold
(its connection is gone, so the answer goes nowhere) instead of keeping a thread asleep.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from storypost_runtime.component import component


@dataclass
class Hold:
    platform: str
    # The account whose token the call carried (None: no valid token).
    account_id: str | None
    method: str
    path: str
    since: float = field(default_factory=time.time)
    released: threading.Event = field(default_factory=threading.Event, repr=False)

    def matches(self, platform: str | None, account_id: str | None) -> bool:
        return platform in (None, self.platform) and account_id in (None, self.account_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "accountId": self.account_id,
            "method": self.method,
            "path": self.path,
            "heldSeconds": round(time.time() - self.since, 3),
        }


@component
class Holds:
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _held: dict[int, Hold] = field(init=False, default_factory=dict)
    _ids: Iterator[int] = field(init=False, default_factory=itertools.count)

    def hold(self, hold: Hold, seconds: float) -> None:
        """Blocks the calling thread until `seconds` pass or the hold is released."""
        number = next(self._ids)
        with self._lock:
            self._held[number] = hold
        try:
            hold.released.wait(seconds)
        finally:
            with self._lock:
                self._held.pop(number, None)

    def listed(self, platform: str | None = None, account_id: str | None = None) -> list[Hold]:
        with self._lock:
            return [h for h in self._held.values() if h.matches(platform, account_id)]

    def release(self, platform: str | None = None, account_id: str | None = None) -> int:
        """Answers every matching held call at once; returns how many."""
        found = self.listed(platform, account_id)
        for hold in found:
            hold.released.set()
        return len(found)
