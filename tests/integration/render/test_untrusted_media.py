"""Uploads are what they claim, downloads never run script, ffmpeg opens no playlist."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.api import Api, Org, upload_inline
from tests.support.canary import WireCanary, wire_canary
from tests.support.media import concat, hls

pytestmark = pytest.mark.integration

SVG = (
    b"<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'>"
    b"<script>alert(document.domain)</script></svg>"
)


def page(src: str) -> str:
    return (
        "<!doctype html><html><body style='margin:0;width:1080px;height:1920px'>"
        f'<photoapp-story src="{src}"></photoapp-story></body></html>'
    )


async def draft(api: Api, org: Org, src: str) -> httpx.Response:
    return await api.call(org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": page(src)})


async def quiet(canary: WireCanary) -> None:
    await asyncio.sleep(0.5)
    assert canary.seen() == [], canary.seen()


async def test_inline_bytes_of_another_type_are_a_400_and_nothing_is_stored(
    api: Api, org: Org
) -> None:
    with wire_canary() as canary:
        answer = await upload_inline(api, org, hls(canary.port), "video/mp4")
        assert answer.status_code == 400, answer.text
        explained = answer.json()["validationErrorExplanation"]
        assert "HLS playlist" in explained["contentBase64"][0], explained
        await quiet(canary)


async def test_playlists_and_concat_lists_as_src_are_refused_before_ffmpeg(
    api: Api, org: Org
) -> None:
    with wire_canary() as canary:
        # video/* types we cannot verify are stored as the spec allows, and refused as a src
        # by their bytes before any tool opens them.
        for body, declared in ((hls(canary.port), "video/x-mpegurl"),
                               (concat(canary.port), "video/x-ffconcat")):  # fmt: skip
            made = await upload_inline(api, org, body, declared)
            assert made.status_code == 200, made.text
            answer = await draft(api, org, made.json()["url"])
            assert answer.status_code == 400, answer.text
            message = answer.json()["errorMessage"]
            assert "is not a video that can be read" in message, message
            assert "HLS playlist" in message or "concat list" in message, message
        await quiet(canary)


async def test_a_presigned_upload_of_other_bytes_is_refused_when_first_used(
    api: Api, org: Org
) -> None:
    with wire_canary() as canary:
        body = hls(canary.port)
        created = await api.call(
            org,
            "create-temp-blob-upload-url",
            {"tempBlobUuid": str(uuid.uuid4()), "contentType": "video/mp4",
             "contentLengthBytes": len(body)},
        )  # fmt: skip
        assert created.status_code == 200, created.text
        async with httpx.AsyncClient(timeout=30) as client:
            put = await client.put(
                created.json()["uploadUrl"], content=body, headers={"Content-Type": "video/mp4"}
            )
            assert put.status_code == 200, put.text
        answer = await draft(api, org, created.json()["url"])
        assert answer.status_code == 400, answer.text
        message = answer.json()["errorMessage"]
        assert "was refused: the content is not video/mp4" in message, message
        assert "HLS playlist" in message, message
        # Never served afterwards either: its URL answers why.
        served = await api.get(created.json()["url"])
        assert served.status_code == 400, served.text
        assert "was refused: the content is not video/mp4" in served.json()["errorMessage"]
        await quiet(canary)


async def test_svg_is_downloaded_as_an_attachment_and_png_inline(api: Api, org: Org) -> None:
    svg = await upload_inline(api, org, SVG, "image/svg+xml")
    assert svg.status_code == 200, svg.text
    png = await upload_inline(api, org, b"\x89PNG\r\n\x1a\n" + bytes(32), "image/png")
    async with httpx.AsyncClient(timeout=30) as client:
        redirect = await api.get(svg.json()["url"])
        assert redirect.status_code == 302
        target = await client.get(redirect.headers["Location"])
        assert target.status_code == 200 and target.content == SVG
        assert target.headers["content-type"] == "application/octet-stream"
        assert target.headers["content-disposition"].startswith("attachment")
        # Never sniffed, and never a document of our origin that could run script.
        assert target.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in target.headers["content-security-policy"]
        redirect = await api.get(png.json()["url"])
        target = await client.get(redirect.headers["Location"])
        assert target.headers["content-type"] == "image/png"
        assert target.headers.get("content-disposition", "inline") == "inline"
        assert target.headers["x-content-type-options"] == "nosniff"


async def test_a_real_mp4_made_by_ffmpeg_still_passes(api: Api, org: Org, tmp_path: Path) -> None:
    good = tmp_path / "good.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=1080x1920:rate=10",
         "-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(good)],
        check=True, timeout=120,
    )  # fmt: skip
    made = await upload_inline(api, org, good.read_bytes(), "video/mp4")
    assert made.status_code == 200, made.text
    answer = await draft(api, org, made.json()["url"])
    assert answer.status_code == 200, answer.text
