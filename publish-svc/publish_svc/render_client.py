"""What publish-svc asks render-svc: prepare a design, finish it, read the result."""

from __future__ import annotations

from publish_svc.model import Kind
from storypost.render.v1 import render_pb2 as rpb
from storypost.render.v1 import render_pb2_grpc
from storypost_runtime.component import component

PURPOSE = {
    Kind.STORY: rpb.PURPOSE_STORY,
    Kind.REEL: rpb.PURPOSE_REEL,
    Kind.CLIPAPP: rpb.PURPOSE_CLIPAPP,
    Kind.SOCIAL: rpb.PURPOSE_SOCIAL,
}
# Rendering a page can take a while (fonts, images, a video probe): the spec asks callers
# to wait up to 120 s for the schedule procedures.
PREPARE_DEADLINE_SECONDS = 100.0


@component
class RenderClient:
    stub: render_pb2_grpc.RenderServiceAsyncStub

    async def prepare(
        self,
        organization_id: str,
        rendering_id: str,
        design: rpb.Design,
        kind: Kind,
        *,
        min_duration_seconds: float = 0.0,
        max_duration_seconds: float = 0.0,
    ) -> rpb.Rendering:
        reply = await self.stub.Prepare(
            rpb.PrepareRequest(
                organization_id=organization_id,
                rendering_id=rendering_id,
                design=design,
                purpose=PURPOSE[kind],
                min_duration_seconds=min_duration_seconds,
                max_duration_seconds=max_duration_seconds,
            ),
            timeout=PREPARE_DEADLINE_SECONDS,
        )
        rendering: rpb.Rendering = reply.rendering
        return rendering

    async def finish(self, organization_id: str, rendering_id: str) -> rpb.Rendering:
        rendering: rpb.Rendering = await self.stub.Finish(
            rpb.FinishRequest(organization_id=organization_id, rendering_id=rendering_id)
        )
        return rendering

    async def get(self, organization_id: str, rendering_id: str) -> rpb.Rendering:
        rendering: rpb.Rendering = await self.stub.GetRendering(
            rpb.GetRenderingRequest(organization_id=organization_id, rendering_id=rendering_id)
        )
        return rendering
