"""The gRPC channels the edge calls: one per service, each with a deadline on every call."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import grpc

from edge.config import EdgeSettings
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import insights_pb2_grpc, publish_pb2_grpc
from storypost.render.v1 import render_pb2_grpc
from storypost.webhook.v1 import webhook_pb2_grpc
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

    # Each service's stub over its channel, built once and shared by every caller.
    @cached_property
    def account_stub(self) -> account_pb2_grpc.AccountServiceStub:
        return account_pb2_grpc.AccountServiceStub(self.account)

    @cached_property
    def render_stub(self) -> render_pb2_grpc.RenderServiceStub:
        return render_pb2_grpc.RenderServiceStub(self.render)

    @cached_property
    def publish_stub(self) -> publish_pb2_grpc.PublishServiceStub:
        return publish_pb2_grpc.PublishServiceStub(self.publish)

    @cached_property
    def insights_stub(self) -> insights_pb2_grpc.InsightsServiceStub:
        """publish-svc's InsightsService (same channel)."""
        return insights_pb2_grpc.InsightsServiceStub(self.publish)

    @cached_property
    def webhook_stub(self) -> webhook_pb2_grpc.WebhookServiceStub:
        return webhook_pb2_grpc.WebhookServiceStub(self.webhook)

    def close(self) -> None:
        for channel in (self.account, self.render, self.publish, self.webhook):
            channel.close()
