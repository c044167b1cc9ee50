"""Container HEALTHCHECK: `grpc`, `edge`, `sandbox` or `mongo`; exit 0 when healthy.

The port comes from the same STORYPOST_* variable the process listens on, so a container
started on other ports checks the right one. Kubernetes uses its native grpc/httpGet probes
instead; this is for Docker and compose.
"""

from __future__ import annotations

import os
import sys
import urllib.request

TIMEOUT_SECONDS = 3.0


def grpc_serving(address: str) -> str | None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=TIMEOUT_SECONDS)
        except grpc.RpcError as error:
            return f"health check failed: {error.code().name}"
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        return f"health status {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}"
    return None


def http_ok(url: str) -> str | None:
    # No proxy: the probe asks this container only.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=TIMEOUT_SECONDS) as response:
            status = int(response.status)
    except OSError as error:
        return f"GET {url}: {error}"
    return None if status == 200 else f"GET {url} answered {status}"


def mongo_ping(url: str) -> str | None:
    from pymongo import MongoClient

    timeout_ms = int(TIMEOUT_SECONDS * 1000)
    client: MongoClient[dict[str, object]] = MongoClient(
        url, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms
    )
    try:
        reply = client.admin.command("ping")
    except Exception as error:
        return f"ping failed: {error}"
    finally:
        client.close()
    return None if reply.get("ok") == 1 else f"ping answered {reply!r}"


def port(variable: str, default: int) -> int:
    return int(os.environ.get(variable) or default)


def target(kind: str) -> str:
    """Where this container listens, from its own settings."""
    if kind == "grpc":
        return f"127.0.0.1:{port('STORYPOST_GRPC_PORT', 50051)}"
    if kind == "edge":
        return f"http://127.0.0.1:{port('STORYPOST_EDGE_PORT', 8080)}/readyz"
    if kind == "sandbox":
        return f"http://127.0.0.1:{port('STORYPOST_SANDBOX_PORT', 8090)}/healthz"
    return f"mongodb://127.0.0.1:{port('MONGO_PORT', 27017)}/?directConnection=true"


CHECKS = {"grpc": grpc_serving, "edge": http_ok, "sandbox": http_ok, "mongo": mongo_ping}


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or argv[0] not in CHECKS:
        print(f"usage: healthcheck.py {{{'|'.join(CHECKS)}}} [TARGET]", file=sys.stderr)
        return 2
    problem = CHECKS[argv[0]](argv[1] if len(argv) == 2 else target(argv[0]))
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
