"""Run-time switches per platform, per account and per endpoint: ok, fail, slow, late-answer,
offline, rate-limited, token-expired."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, cast, get_args

from sandbox_net.errors import PlatformHttpError
from storypost_runtime.vocabulary import SWITCH_MODES

Mode = Literal["ok", "fail", "slow", "late-answer", "offline", "rate-limited", "token-expired"]
# The vocabulary's list; the Literal above only types it (checked equal here).
MODES = cast(tuple[Mode, ...], SWITCH_MODES)
if get_args(Mode) != SWITCH_MODES:
    raise RuntimeError("sandbox_net.switches.Mode differs from vocabulary.SWITCH_MODES")
SEGMENT = r"([A-Za-z0-9_.~-]+|\*)"
ENDPOINT = re.compile(rf"^{SEGMENT}(/{SEGMENT})*$")


@dataclass(frozen=True)
class Switch:
    platform: str
    # Platform account id; None: every account of the platform.
    account_id: str | None
    mode: Mode
    # fail: the error message and HTTP status.
    message: str = "the platform rejected the request"
    status: int = 400
    # slow: seconds before the call is performed; late-answer: seconds between performing it
    # and answering (a caller that gives up earlier never learns what happened).
    seconds: float = 0.0
    # rate-limited: the Retry-After the platform answers.
    retry_after_seconds: int = 60
    # Only calls whose path ends with this ("post/publish/video/init"); None: every call.
    endpoint: str | None = None
    # Applies to this many more calls, then removes itself; None: until it is removed.
    times: int | None = None

    def key(self) -> str:
        return switch_key(self.platform, self.account_id, self.endpoint)

    def applies_to(self, path: str | None) -> bool:
        if self.endpoint is None:
            return True
        if path is None:
            return False
        # A `*` segment stands for any one segment (an id: "containers/*").
        wanted = self.endpoint.split("/")
        segments = path.rstrip("/").split("/")
        if len(segments) <= len(wanted):
            return False
        tail = segments[-len(wanted) :]
        return all(w in ("*", s) for w, s in zip(wanted, tail, strict=True))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {
            "platform": data["platform"],
            "account": data["account_id"],
            "mode": data["mode"],
            "message": data["message"],
            "status": data["status"],
            "seconds": data["seconds"],
            "retryAfterSeconds": data["retry_after_seconds"],
            "endpoint": data["endpoint"],
            "times": data["times"],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Switch:
        return cls(
            platform=data["platform"],
            account_id=data.get("account"),
            mode=cast(Mode, data["mode"]),
            message=data.get("message") or "the platform rejected the request",
            status=int(data.get("status") or 400),
            seconds=float(data.get("seconds") or 0.0),
            retry_after_seconds=int(data.get("retryAfterSeconds") or 60),
            endpoint=normalize_endpoint(data.get("endpoint")),
            times=None if data.get("times") is None else int(data["times"]),
        )

    def used_once(self) -> Switch | None:
        """The switch after applying to one call (None: it is used up)."""
        if self.times is None:
            return self
        return replace(self, times=self.times - 1) if self.times > 1 else None


def normalize_endpoint(value: Any) -> str | None:
    """`/post/publish/video/init/` → `post/publish/video/init`; empty → None (every call)."""
    if value is None:
        return None
    text = str(value).strip().strip("/")
    if not text:
        return None
    if len(text) > 200 or not ENDPOINT.match(text):
        raise ValueError(
            "endpoint must be a URL path such as post/publish/video/init (`*`: any one segment)"
        )
    return text


def switch_key(platform: str, account_id: str | None, endpoint: str | None = None) -> str:
    base = f"{platform}:{account_id}" if account_id else platform
    return f"{base} {endpoint}" if endpoint else base


def failure_for(switch: Switch, *, token_call: bool) -> PlatformHttpError | None:
    """The error a switch answers with (after any delay); None lets the call through
    (`late-answer` performs the call and delays its answer: see `Gate.enter`).

    `token_call`: the call carries an access or refresh token (token-expired applies only
    there; authorizing and exchanging a fresh code still work).
    """
    match switch.mode:
        case "fail":
            return PlatformHttpError(switch.status, "rejected", switch.message)
        case "offline":
            return PlatformHttpError(
                503,
                "unavailable",
                "the platform is offline",
                headers={"Connection": "close", "Retry-After": "5"},
            )
        case "rate-limited":
            return PlatformHttpError(
                429,
                "rate_limited",
                "too many requests; try again later",
                headers={"Retry-After": str(switch.retry_after_seconds)},
            )
        case "token-expired" if token_call:
            return PlatformHttpError(
                401, "token_expired", "the access token has expired or was revoked"
            )
        case _:
            return None
