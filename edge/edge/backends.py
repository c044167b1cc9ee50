"""The gRPC channels the edge calls: one per service, each with a deadline on every call."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from edge.config import EdgeSettings
from storypost_runtime.grpc_client import sync_channel
from storypost_runtime.service_auth import caller_signer


@dataclass(frozen=True)
class Backends:
    account: grpc.Channel
    render: grpc.Channel
    publish: grpc.Channel
    webhook: grpc.Channel

    @classmethod
    def connect(cls, settings: EdgeSettings) -> Backends:
        deadline = settings.grpc_deadline_seconds
        signer = caller_signer(settings.service_key)
        return cls(
            account=sync_channel(settings.account_addr, deadline, signer),
            render=sync_channel(settings.render_addr, deadline, signer),
            publish=sync_channel(settings.publish_addr, deadline, signer),
            webhook=sync_channel(settings.webhook_addr, deadline, signer),
        )

    def close(self) -> None:
        for channel in (self.account, self.render, self.publish, self.webhook):
            channel.close()
