"""Magic numbers and pinned ffmpeg inputs: a playlist or a list of files is never opened."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from render_svc.ffmpeg import MediaToolError, MediaTools, VideoSettings
from render_svc.sniff import (
    HEAD_BYTES,
    NotAVideo,
    detect,
    mismatch,
    served_as,
    video_demuxer,
)
from tests.support.canary import wire_canary
from tests.support.media import concat, hls

LAVFI = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi"]
# name: (ffmpeg arguments after the lavfi source, declared type, demuxer or None)
SAMPLES: dict[str, tuple[list[str], str, str | None]] = {
    "clip.mp4": (["-i", "testsrc=size=64x64:rate=5", "-t", "0.4", "-c:v", "libx264",
                  "-pix_fmt", "yuv420p"], "video/mp4", "mov"),
    "clip.mov": (["-i", "testsrc=size=64x64:rate=5", "-t", "0.4", "-c:v", "libx264"],
                 "video/quicktime", "mov"),
    "clip.webm": (["-i", "testsrc=size=64x64:rate=5", "-t", "0.4", "-c:v", "libvpx-vp9"],
                  "video/webm", "matroska"),
    "clip.ts": (["-i", "testsrc=size=64x64:rate=5", "-t", "0.4"], "video/mp2t", "mpegts"),
    "still.png": (["-i", "color=c=red:s=8x8", "-frames:v", "1"], "image/png", None),
    "still.jpg": (["-i", "color=c=red:s=8x8", "-frames:v", "1"], "image/jpeg", None),
    "still.gif": (["-i", "color=c=red:s=8x8", "-frames:v", "1"], "image/gif", None),
    "still.webp": (["-i", "color=c=red:s=8x8", "-frames:v", "1"], "image/webp", None),
    "tone.wav": (["-i", "sine=d=0.2"], "audio/wav", None),
    "tone.ogg": (["-i", "sine=d=0.2", "-c:a", "libvorbis"], "audio/ogg", None),
    "tone.m4a": (["-i", "sine=d=0.2", "-c:a", "aac"], "audio/mp4", "mov"),
    "tone.aac": (["-i", "sine=d=0.2", "-c:a", "aac", "-f", "adts"], "audio/aac", None),
    "tone.mp3": (["-i", "sine=d=0.2", "-c:a", "libmp3lame"], "audio/mpeg", None),
}  # fmt: skip


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("samples")
    for name, (args, _declared, _demuxer) in SAMPLES.items():
        subprocess.run([*LAVFI, *args, str(root / name)], check=True, timeout=60)
    return root


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_files_made_by_ffmpeg_are_their_declared_type(samples: Path, name: str) -> None:
    head = (samples / name).read_bytes()[:HEAD_BYTES]
    _args, declared, demuxer = SAMPLES[name]
    assert mismatch(declared, head) is None, (name, detect(head))
    if demuxer:
        assert video_demuxer(head) == demuxer
    else:
        with pytest.raises(NotAVideo):
            video_demuxer(head)


def test_other_bytes_under_a_verifiable_type_are_named() -> None:
    svg = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"
    assert mismatch("image/png", svg) == (
        "the content is not image/png: its bytes are text or markup (HTML, SVG, XML or a script)"
    )
    assert "an HLS playlist" in (mismatch("video/mp4", hls(1)) or "")
    assert "an ffmpeg concat list" in (mismatch("video/webm", concat(1)) or "")
    assert "a PNG image" in (mismatch("video/mp4", b"\x89PNG\r\n\x1a\n") or "")
    assert "no media format we know" in (mismatch("audio/wav", b"\x00" * 64) or "")
    assert mismatch("image/PNG", b"\x89PNG\r\n\x1a\n") is None, "types are case-insensitive"


def test_only_verified_types_are_served_inline() -> None:
    assert served_as("image/png") == ("image/png", "inline")
    assert served_as("video/mp4") == ("video/mp4", "inline")
    for active in ("image/svg+xml", "image/x-anything", "video/x-mpegurl", "audio/x-scpls"):
        assert mismatch(active, b"<svg/>") is None, "the spec accepts any image/video/audio"
        assert served_as(active) == ("application/octet-stream", "attachment")


async def test_ffprobe_reads_a_real_mp4_pinned_to_its_demuxer(samples: Path) -> None:
    facts = await MediaTools(VideoSettings()).probe(samples / "clip.mp4")
    assert (facts.codec, facts.width, facts.height) == ("h264", 64, 64)
    webm = await MediaTools(VideoSettings()).probe(samples / "clip.webm")
    assert webm.codec == "vp9"


@pytest.mark.parametrize("make", [hls, concat])
async def test_playlists_never_reach_ffprobe_or_the_network(tmp_path: Path, make: object) -> None:
    assert callable(make)
    with wire_canary() as canary:
        path = tmp_path / "source.video"
        path.write_bytes(make(canary.port))
        # A tool path that cannot run: the refusal comes before any process is started.
        tools = MediaTools(VideoSettings(ffmpeg="/nonexistent/ffmpeg", ffprobe="/nonexistent/x"))
        with pytest.raises(MediaToolError, match="not an MP4, MOV, WebM/Matroska or MPEG-TS"):
            await tools.probe(path)
        with pytest.raises(MediaToolError, match="not an MP4"):
            await tools.composite(path, path, tmp_path / "o.mp4", tmp_path / "p.jpg", 10)
        await asyncio.sleep(0.3)
        assert canary.seen() == []


async def test_the_pinned_demuxer_and_whitelist_hold_even_for_a_disguised_playlist(
    tmp_path: Path,
) -> None:
    """Were the sniffing fooled, ffprobe still reads the file only as the pinned demuxer."""
    with wire_canary() as canary:
        path = tmp_path / "source.video"
        # An MP4 signature followed by a playlist: sniffed as MP4, then read as MP4 only.
        path.write_bytes(b"\x00\x00\x00\x18ftypisom\x00\x00\x00\x00" + hls(canary.port))
        with pytest.raises(MediaToolError):
            await MediaTools(VideoSettings()).probe(path)
        await asyncio.sleep(0.3)
        assert canary.seen() == []


def test_every_ffmpeg_input_is_a_pinned_local_file() -> None:
    argv = MediaTools(VideoSettings()).composite_argv(
        Path("in.webm"), Path("o.png"), Path("out.mp4"), None, copy_audio=False,
        demuxer="matroska",
    )  # fmt: skip
    inputs = [i for i, arg in enumerate(argv) if arg == "-i"]
    assert len(inputs) == 2
    for at, demuxer in zip(inputs, ("matroska", "png_pipe"), strict=True):
        assert argv[at - 6 : at] == [
            "-protocol_whitelist", "file", "-format_whitelist", demuxer, "-f", demuxer,
        ]  # fmt: skip
