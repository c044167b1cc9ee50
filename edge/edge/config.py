"""Edge settings (STORYPOST_* environment variables)."""

from __future__ import annotations

from pydantic import Field

from storypost_runtime.settings import PublicUrlSettings, ServiceAddresses


class EdgeSettings(PublicUrlSettings, ServiceAddresses):
    edge_host: str = "127.0.0.1"
    edge_port: int = Field(default=8080, ge=0, le=65535)
    # Worker threads of the HTTP server (edge/serve.py): concurrent requests in flight per
    # replica. Each waits on its gRPC call, so a replica answers at most threads / latency
    # requests per second.
    edge_threads: int = Field(default=64, ge=1, le=512)
    # Idle keep-alive connections a replica keeps open; past it an answer closes its
    # connection (the caller opens a new one for its next call).
    edge_connection_limit: int = Field(default=1000, ge=1, le=100_000)
    # The proxy in front of the edge (the ingress) whose X-Forwarded-For/-Proto are believed:
    # its address, or "*" when only the proxy can reach the edge (a NetworkPolicy admits the
    # ingress controller only). Empty: the socket's peer is the client, headers are dropped.
    edge_trusted_proxy: str = ""
    # How many proxies append to X-Forwarded-For before the edge (the client is the entry
    # that many from the right).
    edge_trusted_proxy_count: int = Field(default=1, ge=1, le=10)
    # A revoked token stops working within this time (0: every call asks account-svc). A
    # valid token's check is remembered up to 10 minutes while account-svc's revocation feed,
    # read every third of this time, is current, and this long when it is not; an invalid
    # token's for this long (edge/auth.py).
    auth_cache_seconds: float = Field(default=5.0, ge=0, le=300)
    # Largest request body: upload-temp-blob's 41,943,040 base64 characters plus room for JSON.
    max_body_bytes: int = Field(default=48 * 1024 * 1024, ge=1024)
    # Deadline of the render procedures' calls (the spec asks callers to wait 120 s).
    render_deadline_seconds: float = Field(default=110.0, gt=0, le=600)
    # After SIGTERM: /readyz answers 503 this long before the listener closes.
    shutdown_drain_seconds: float = Field(default=0.0, ge=0, le=120)
    # Then in-flight requests get this long to finish.
    shutdown_grace_seconds: float = Field(default=10.0, ge=0, le=600)

    def base_url(self, organization_id: str) -> str:
        return f"{self.public_url.rstrip('/')}/o/{organization_id}/api/v1"

    def app_url(self, organization_id: str) -> str:
        return f"{self.public_url.rstrip('/')}/o/{organization_id}"
