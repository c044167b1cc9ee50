"""Baselines for bench/edge_vs_bare.py: a bare Falcon route on the edge's own HTTP server
(edge/serve.py), optionally doing the auth calls. Started by that bench as a script, so
bench/ is first on its sys.path: no bench file may be named like a package (bench/edge.py
once hid `edge`; tests/unit/bench/test_benches_start.py checks)."""

from __future__ import annotations

import argparse
import os
import uuid

import falcon

from edge.config import EdgeSettings
from edge.serve import create_server
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.grpc_client import sync_channel
from storypost_runtime.service_auth import caller_signer


class Plain:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.bounded_stream.read()
        resp.media = {"uuid": str(uuid.uuid4())}


class Authenticated:
    """The least an authenticated call needs: check the token and take from the bucket."""

    def __init__(self, accounts: account_pb2_grpc.AccountServiceStub, org: str) -> None:
        self._accounts = accounts
        self._org = org

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.bounded_stream.read()
        token = (req.get_header("Authorization") or "").removeprefix("Bearer ")
        self._accounts.Authenticate(pb.AuthenticateRequest(token=token), timeout=5)
        self._accounts.ConsumeRateLimit(
            pb.ConsumeRateLimitRequest(organization_id=self._org), timeout=5
        )
        resp.media = {"uuid": str(uuid.uuid4())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--account-addr")
    parser.add_argument("--org")
    args = parser.parse_args()
    app = falcon.App()
    if args.account_addr:
        # Signed as the edge signs its calls (STORYPOST_SERVICE_KEY), with the same channel.
        channel = sync_channel(
            args.account_addr, 5.0, caller_signer(os.environ.get("STORYPOST_SERVICE_KEY", ""))
        )
        stub = account_pb2_grpc.AccountServiceStub(channel)
        app.add_route("/noop", Authenticated(stub, args.org))
    else:
        app.add_route("/noop", Plain())
    create_server(app, EdgeSettings(edge_port=args.port, edge_threads=args.threads)).serve()


if __name__ == "__main__":
    main()
