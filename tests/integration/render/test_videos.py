"""Video designs: every rejection message, the composite, its preview and the NATS event."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.conftest import Videos
from tests.integration.render.rendering import download, finished, prepare, story_page
from tests.integration.render.support import decode_rgb, mean_color, probe
from tests.support.pages import PageServer

pytestmark = pytest.mark.integration


def video_page(src: str, stickers: str = "") -> str:
    return (
        "<!doctype html><html><head><style>body{margin:0;width:1080px;height:1920px;"
        "background:#000}</style></head><body>"
        f'<photoapp-story src="{src}"><div style="position:absolute;inset:0;display:flex;'
        'flex-direction:column;align-items:center;gap:40px;padding:300px 40px">'
        f"{stickers}</div></photoapp-story></body></html>"
    )


@pytest.mark.parametrize(
    ("name", "purpose", "message"),
    [
        ("mpeg4", pb.PURPOSE_STORY, "the video codec must be h264, but this video is mpeg4"),
        (
            "small",
            pb.PURPOSE_STORY,
            "the video must be 1080x1920 pixels (9:16 portrait), but this video is 720x1280",
        ),
        (
            "heavy",
            pb.PURPOSE_STORY,
            "the video bitrate must be at most 30 Mbps, but this video has",
        ),
        (
            "long",
            pb.PURPOSE_STORY,
            "the video is too long: 61 s; a story video may be at most 60 s",
        ),
        (
            "long",
            pb.PURPOSE_DRAFT,
            "the video is too long: 61 s; a draft video may be at most 60 s",
        ),
        (
            "short",
            pb.PURPOSE_STORY,
            "the video is too short: 0.3 s; a story video must be at least 0.5 s",
        ),
        ("short", pb.PURPOSE_REEL, "the video is too short: 0.3 s; a reel video must be at least"),
    ],
)
async def test_videos_breaking_a_rule_are_refused_with_a_descriptive_message(
    render: render_pb2_grpc.RenderServiceAsyncStub,
    page_server: PageServer,
    videos: Videos,
    name: str,
    purpose: int,
    message: str,
) -> None:
    src = page_server.url(f"/video/{name}.mp4")
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await prepare(render, pb.Design(html=video_page(src)), purpose=purpose)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = raised.value.details() or ""
    assert details.startswith("video does not meet the requirements: "), details
    assert message in details


async def test_long_videos_fit_longer_purposes_and_social_bounds(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, videos: Videos
) -> None:
    src = page_server.url("/video/long.mp4")
    reel = await prepare(render, pb.Design(html=video_page(src)), purpose=pb.PURPOSE_REEL)
    assert reel.media_kind == pb.MEDIA_KIND_VIDEO and reel.duration_seconds == pytest.approx(61)
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await prepare(
            render, pb.Design(html=video_page(src)), purpose=pb.PURPOSE_SOCIAL, max_seconds=30
        )
    assert "a post of this type video may be at most 30 s" in (raised.value.details() or "")


async def test_sources_that_cannot_be_had_are_refused(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    cases = {
        page_server.url("/missing"): "the <photoapp-story> src answered HTTP 404",
        page_server.url("/page/none-such"): "the <photoapp-story> src is not a video",
        "http://10.9.8.7/v.mp4": "the <photoapp-story> src is not allowed: private or reserved",
        "ftp://example.com/v.mp4": "invalid src",
    }
    page_server.page("none-such", "<p>not a video</p>")
    for src, message in cases.items():
        if "invalid src" in message:
            rendering = await prepare(render, pb.Design(html=video_page(src)))
            # Not an http(s) URL: a warning, and the design renders as an image.
            assert rendering.media_kind == pb.MEDIA_KIND_IMAGE
            assert any(message in w for w in rendering.warnings)
            continue
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await prepare(render, pb.Design(html=video_page(src)))
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in (raised.value.details() or ""), raised.value.details()


async def test_a_reel_needs_a_video(render: render_pb2_grpc.RenderServiceAsyncStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await prepare(
            render, pb.Design(html=story_page("<h1>no video</h1>")), purpose=pb.PURPOSE_REEL
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "a reel needs a video" in (raised.value.details() or "")


async def test_a_video_design_is_composited_with_a_preview(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, videos: Videos
) -> None:
    html = video_page(
        page_server.url("/video/good.mp4"),
        '<photoapp-hashtag hashtag="behindthescenes"></photoapp-hashtag>',
    )
    prepared = await prepare(render, pb.Design(html=html))
    assert prepared.state == pb.RENDERING_STATE_PREPARED
    assert prepared.media_kind == pb.MEDIA_KIND_VIDEO
    assert prepared.duration_seconds == pytest.approx(2.0, abs=0.1)
    assert [s.kind for s in prepared.stickers] == ["hashtag"]
    done = await finished(render, prepared)
    assert done.state == pb.RENDERING_STATE_FINISHED, done.error_message
    assert done.media_content_type == "video/mp4"
    media = await download(done.media_url)
    facts = probe(media)
    assert facts["codec_name"] == "h264"
    assert (facts["width"], facts["height"]) == ("1080", "1920")
    assert float(facts["duration"]) == pytest.approx(2.0, abs=0.1)
    preview = await download(done.preview_url)
    assert probe(preview) | {"duration": ""} == {
        "codec_name": "mjpeg",
        "width": "360",
        "height": "640",
        "duration": "",
    }
    # The page's black background did not hide the video: the preview is the colourful
    # test pattern with the white sticker on top, not a black frame.
    red, green, blue = mean_color(decode_rgb(preview, 36, 64))
    assert red + green + blue > 150


async def test_slow_video_sources_hold_no_browser_slot(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    """Issue #21 item 5: an organization whose video sources trickle in keeps no render of
    another organization waiting. Three slow sources (more than the instance's two render
    slots) are fetched while another organization's image design is rendered at once."""
    asked = page_server.count("/wait")
    slow = [
        asyncio.create_task(
            prepare(
                render,
                pb.Design(html=video_page(page_server.url(f"/wait?ms=30000&n={n}"))),
                org="slow",
            )
        )
        for n in range(3)
    ]
    try:
        while page_server.count("/wait") < asked + 2:  # both source slots are fetching
            await asyncio.sleep(0.1)
        rendering = await prepare(render, pb.Design(html=story_page("<h1>quick</h1>")), org="quick")
        assert rendering.state == pb.RENDERING_STATE_PREPARED, rendering
        # Rendered while every slow source was still on its way.
        assert not any(task.done() for task in slow)
    finally:
        for task in slow:
            task.cancel()
        await asyncio.gather(*slow, return_exceptions=True)
