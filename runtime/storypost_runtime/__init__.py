"""storypost_runtime: what every storypost process shares.

gRPC's fork handlers are turned off (unless the environment says otherwise) before any gRPC
channel or server exists: our processes start children through fork+exec (the supervisor's
components with a parent-death signal, render-svc's Chromium and ffmpeg), and with the
handlers on, a child forked while gRPC's poller runs can restart that poller between fork
and exec, find its epoll descriptor closed and abort (SIGABRT, "epoll_wait error: Bad file
descriptor") before it ever runs. Nothing of ours uses gRPC across a fork.
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
