"""Video requirements: bounds per purpose, one message per broken rule, ffprobe parsing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from render_svc.ffmpeg import MediaToolError, MediaTools, VideoSettings, facts_from_probe
from render_svc.video_rules import VideoFacts, bounds_for, check, violations
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.errors import InvalidArgument

GOOD = VideoFacts("h264", 1080, 1920, 8_000_000, 12.0)


def with_(**changes: object) -> VideoFacts:
    return dataclasses.replace(GOOD, **changes)  # type: ignore[arg-type]


def test_a_good_video_passes_every_purpose() -> None:
    for purpose in (pb.PURPOSE_STORY, pb.PURPOSE_REEL, pb.PURPOSE_DRAFT, pb.PURPOSE_CLIPAPP):
        check(GOOD, bounds_for(purpose))
    check(GOOD, bounds_for(pb.PURPOSE_SOCIAL, 3, 15))


@pytest.mark.parametrize(
    ("facts", "purpose", "message"),
    [
        (
            with_(codec="hevc"),
            pb.PURPOSE_STORY,
            "the video codec must be h264, but this video is hevc",
        ),
        (
            with_(width=720, height=1280),
            pb.PURPOSE_STORY,
            "the video must be 1080x1920 pixels (9:16 portrait), but this video is 720x1280",
        ),
        (
            with_(bitrate=41_200_000),
            pb.PURPOSE_STORY,
            "the video bitrate must be at most 30 Mbps, but this video has 41.2 Mbps",
        ),
        (
            with_(duration=61.5),
            pb.PURPOSE_STORY,
            "the video is too long: 61.5 s; a story video may be at most 60 s",
        ),
        (
            with_(duration=0.3),
            pb.PURPOSE_STORY,
            "the video is too short: 0.3 s; a story video must be at least 0.5 s",
        ),
        (
            with_(duration=181),
            pb.PURPOSE_REEL,
            "the video is too long: 181 s; a reel video may be at most 180 s",
        ),
        (
            with_(duration=60.25),
            pb.PURPOSE_DRAFT,
            "the video is too long: 60.25 s; a draft video may be at most 60 s",
        ),
        (
            with_(duration=601),
            pb.PURPOSE_CLIPAPP,
            "the video is too long: 601 s; a clipapp post video may be at most 600 s",
        ),
        (with_(duration=None), pb.PURPOSE_STORY, "the video duration cannot be read"),
    ],
)
def test_each_broken_rule_has_its_own_message(
    facts: VideoFacts, purpose: int, message: str
) -> None:
    assert violations(facts, bounds_for(purpose)) == [message]
    with pytest.raises(InvalidArgument) as raised:
        check(facts, bounds_for(purpose))
    assert raised.value.message == f"video does not meet the requirements: {message}"


def test_social_posts_use_the_post_types_bounds() -> None:
    bounds = bounds_for(pb.PURPOSE_SOCIAL, 3, 15)
    assert violations(with_(duration=2), bounds) == [
        "the video is too short: 2 s; a post of this type video must be at least 3 s"
    ]
    assert violations(with_(duration=16), bounds) == [
        "the video is too long: 16 s; a post of this type video may be at most 15 s"
    ]
    assert violations(with_(duration=600), bounds_for(pb.PURPOSE_SOCIAL, 0, 0)) == []
    with pytest.raises(InvalidArgument):
        bounds_for(pb.PURPOSE_SOCIAL, 10, 5)
    with pytest.raises(InvalidArgument):
        bounds_for(pb.PURPOSE_UNSPECIFIED)


def test_every_broken_rule_is_named_at_once() -> None:
    facts = VideoFacts("vp9", 1920, 1080, 50_000_000, 90.0)
    assert len(violations(facts, bounds_for(pb.PURPOSE_STORY))) == 4


def test_only_reels_require_a_video() -> None:
    assert bounds_for(pb.PURPOSE_REEL).video_required
    assert not bounds_for(pb.PURPOSE_STORY).video_required


def test_probe_facts_use_the_video_stream_and_its_rotation() -> None:
    probe = {
        "streams": [
            {"codec_type": "audio", "codec_name": "aac"},
            {
                "codec_type": "video",
                "codec_name": "mjpeg",
                "width": 600,
                "height": 600,
                "disposition": {"attached_pic": 1},
            },
            {
                "codec_type": "video",
                "codec_name": "h264",
                "width": 1920,
                "height": 1080,
                "side_data_list": [{"rotation": -90}],
                "duration": "10.5",
            },
        ],
        "format": {"bit_rate": "12000000", "duration": "10.6", "size": "1000"},
    }
    assert facts_from_probe(probe) == VideoFacts("h264", 1080, 1920, 12_000_000, 10.5)


def test_probe_bitrate_falls_back_to_size_over_duration() -> None:
    probe = {
        "streams": [{"codec_type": "video", "codec_name": "h264", "width": 1080, "height": 1920}],
        "format": {"duration": "2", "size": "10000000"},
    }
    assert facts_from_probe(probe).bitrate == 40_000_000


def test_a_file_without_video_is_refused() -> None:
    with pytest.raises(MediaToolError, match="no video stream"):
        facts_from_probe({"streams": [{"codec_type": "audio"}], "format": {}})


def test_composite_makes_the_preview_in_the_same_pass() -> None:
    tools = MediaTools(VideoSettings(preset="veryfast", crf=21, max_bitrate="20M"))
    argv = tools.composite_argv(
        Path("in.mp4"), Path("o.png"), Path("out.mp4"), Path("p.jpg"), copy_audio=True
    )
    graph = argv[argv.index("-filter_complex") + 1]
    assert graph.startswith("[0:v][1:v]overlay=0:0,split=2[main][first]")
    assert "scale=360:640[preview]" in graph
    assert argv[argv.index("-c:v") + 1] == "libx264"
    assert argv[argv.index("-crf") + 1] == "21"
    assert argv[argv.index("-maxrate") + 1] == "20M"
    assert argv[argv.index("-c:a") + 1] == "copy"
    assert argv[-5:] == ["-map", "[preview]", "-frames:v", "1", "-q:v", "3", "p.jpg"][-5:]
