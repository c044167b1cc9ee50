"""Calls the tests make to a render-svc: prepare, finish, wait, download the media."""

from __future__ import annotations

import asyncio
import uuid

import httpx

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc

ORG = "render-tests-org"
LAYER = (
    "position:absolute;inset:0;display:flex;flex-direction:column;align-items:center;"
    "gap:40px;padding:{top}px 40px"
)


def story_page(stickers: str, *, background: str = "#334455", top: int = 120) -> str:
    """A 1080x1920 page with the stickers in the spec's advised flex column layer."""
    return (
        "<!doctype html><html><head><style>"
        f"body{{margin:0;width:1080px;height:1920px;background:{background}}}"
        "</style></head><body><photoapp-story>"
        f'<div style="{LAYER.format(top=top)}">{stickers}</div>'
        "</photoapp-story></body></html>"
    )


async def prepare(
    stub: render_pb2_grpc.RenderServiceAsyncStub,
    design: pb.Design,
    *,
    purpose: int = pb.PURPOSE_STORY,
    org: str = ORG,
    rendering_id: str | None = None,
    min_seconds: float = 0.0,
    max_seconds: float = 0.0,
) -> pb.Rendering:
    reply = await stub.Prepare(
        pb.PrepareRequest(
            organization_id=org,
            rendering_id=rendering_id or uuid.uuid4().hex,
            design=design,
            purpose=purpose,  # type: ignore[arg-type]
            min_duration_seconds=min_seconds,
            max_duration_seconds=max_seconds,
        ),
        timeout=90,
    )
    rendering: pb.Rendering = reply.rendering
    return rendering


async def finished(
    stub: render_pb2_grpc.RenderServiceAsyncStub, rendering: pb.Rendering, seconds: float = 120
) -> pb.Rendering:
    """Finishes a prepared rendering and waits until it is FINISHED or FAILED."""
    current: pb.Rendering = await stub.Finish(
        pb.FinishRequest(
            organization_id=rendering.organization_id, rendering_id=rendering.rendering_id
        )
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while current.state not in (pb.RENDERING_STATE_FINISHED, pb.RENDERING_STATE_FAILED):
        if loop.time() > deadline:
            raise AssertionError(f"rendering still {current.state} after {seconds} s")
        await asyncio.sleep(0.2)
        current = await stub.GetRendering(
            pb.GetRenderingRequest(
                organization_id=rendering.organization_id, rendering_id=rendering.rendering_id
            )
        )
    return current


async def download(url: str) -> bytes:
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.get(url)
        response.raise_for_status()
        return response.content


async def render_image(
    stub: render_pb2_grpc.RenderServiceAsyncStub, html: str
) -> tuple[pb.Rendering, bytes]:
    """The JPEG of an image design, as a platform would fetch it."""
    done = await finished(stub, await prepare(stub, pb.Design(html=html)))
    assert done.state == pb.RENDERING_STATE_FINISHED, done.error_message
    return done, await download(done.media_url)
