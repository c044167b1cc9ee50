"""render-svc keeps its secrets from what it starts: the browser, its driver, ffmpeg.

Settings are read once at start-up; afterwards no process render-svc starts needs them, and
a compromised browser or ffmpeg (both handle tenants' bytes) must not find them. So the
process environment loses every variable of the settings' prefix (STORYPOST_*) before the
first child starts, and the process is made non-dumpable: a process of the same uid (ffmpeg)
could otherwise read render-svc's memory and /proc/<pid>/environ (which still holds the
environment it was started with).
"""

from __future__ import annotations

import ctypes
import os

from pydantic_settings import BaseSettings

from storypost_runtime.logs import get_logger

log = get_logger(__name__)

PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def confine_service_process(settings: BaseSettings) -> None:
    """Removes the variables `settings` were read from (its env_prefix), then the dump right."""
    prefix = str(type(settings).model_config.get("env_prefix") or "")
    if not prefix:
        raise ValueError("settings without an env_prefix: which variables to remove is unknown")
    removed = [name for name in os.environ if name.startswith(prefix)]
    for name in removed:
        del os.environ[name]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    log.info("settings removed from the environment of children", variables=len(removed))
