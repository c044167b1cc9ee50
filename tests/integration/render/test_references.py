"""Every sticker element with every design and colour value, against reference images.

Several elements share one page capture, so the whole set costs a dozen renders. The
references (half size, PNG) are in refs/; after a deliberate change to the component
script, regenerate them with STORYPOST_UPDATE_RENDER_REFS=1 and look at every one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.rendering import render_image, story_page
from tests.integration.render.support import decode_rgb, difference, probe, write_png

pytestmark = pytest.mark.integration

REFS = Path(__file__).parent / "refs"
UPDATE = os.environ.get("STORYPOST_UPDATE_RENDER_REFS") == "1"
# Tolerance for another machine's anti-aliasing and JPEG rounding, far below what a changed
# colour, a missing icon or a moved sticker costs.
MAX_MEAN = 3.0
MAX_STRONG = 0.01

# Countdowns that ended long ago show 00 00 00 whenever the test runs.
PAST = "2026-01-31T18:45:00Z"
POLL_OPTIONS = '["Ocean blue","Sunset orange"]'
QUIZ_OPTIONS = '["2009","2012","2015","2018"]'


def pills(tag: str, attribute: str, value: str, designs: tuple[str, ...]) -> str:
    return "".join(f'<{tag} {attribute}="{value}" design="{design}"></{tag}>' for design in designs)


def poll(color: str) -> str:
    return (
        f"<photoapp-poll question=\"Which colour next?\" options='{POLL_OPTIONS}' "
        f'color="{color}"></photoapp-poll>'
    )


def question(text: str) -> Callable[[str], str]:
    return lambda color: (
        f'<photoapp-question question="{text}" color="{color}"></photoapp-question>'
    )


def countdown(title: str) -> Callable[[str], str]:
    return lambda color: (
        f'<photoapp-countdown title="{title}" end-time="{PAST}" color="{color}">'
        "</photoapp-countdown>"
    )


def in_colours(sticker: Callable[[str], str], colors: tuple[str, ...]) -> str:
    """The sticker once in each colour, in order."""
    return "".join(sticker(c) for c in colors)


def by_colour(
    kind: str, sticker: Callable[[str], str], background: str, *groups: tuple[str, ...]
) -> dict[str, tuple[str, str]]:
    """One page per group of colours, a sticker in each colour of the group (`kind-a-b-c`)."""
    return {
        f"{kind}-{'-'.join(colors)}": (in_colours(sticker, colors), background) for colors in groups
    }


PAGES: dict[str, tuple[str, str]] = {
    "hashtag-mention": (
        pills("photoapp-hashtag", "hashtag", "summersale", ("default", "gray", "rainbow"))
        + pills("photoapp-mention", "username", "storypost.app", ("default", "gray", "rainbow")),
        "linear-gradient(160deg,#5b86e5,#36d1dc)",
    ),
    "location-link": (
        "".join(
            f'<photoapp-location location="Café de Flore" location-id="2150431" '
            f'design="{d}"></photoapp-location>'
            for d in ("default", "gray", "black", "orange", "rainbow")
        )
        + '<photoapp-link url="https://shop.example.com/sale" text="Shop the sale">'
        "</photoapp-link>",
        "linear-gradient(160deg,#f7797d,#fbd786,#c6ffdd)",
    ),
    "link": (
        "".join(
            f'<photoapp-link url="https://shop.example.com/sale" text="Shop the sale" '
            f'design="{d}"></photoapp-link>'
            for d in ("gray", "black", "rainbow")
        )
        + '<photoapp-link url="https://www.example.com/very/long/path"></photoapp-link>',
        "linear-gradient(160deg,#134e5e,#71b280)",
    ),
    **by_colour(
        "poll",
        poll,
        "#2b2d42",
        ("black", "pink", "lavender"),
        ("purple", "orange", "green"),
    ),
    "poll-blue-quiz": (
        poll("blue") + '<photoapp-poll options=\'["Yes","No"]\'></photoapp-poll>'
        f"<photoapp-quiz question=\"Which year did we open?\" options='{QUIZ_OPTIONS}' "
        'correct-answer="1"></photoapp-quiz>',
        "#3d405b",
    ),
    **by_colour(
        "question",
        question("Ask me anything about our summer drop"),
        "linear-gradient(#8e9eab,#eef2f3)",
        ("white", "black", "pink"),
        ("lavender", "purple", "orange"),
    ),
    "question-green-blue-slider": (
        in_colours(question("What should we bake next?"), ("green", "blue"))
        + '<photoapp-emoji-slider question="How excited are you?"></photoapp-emoji-slider>',
        "linear-gradient(#c9d6ff,#e2e2e2)",
    ),
    **by_colour(
        "countdown",
        countdown("Summer sale ends"),
        "linear-gradient(#e0c3fc,#8ec5fc)",
        ("black", "white", "purple"),
        ("red", "orange", "yellow"),
    ),
    "countdown-green-blue-sliders": (
        in_colours(countdown("Doors open"), ("green", "blue"))
        + '<photoapp-emoji-slider question="Rate our new menu" emoji="🔥" color="#1E1B4B" '
        'text-color="#FDE68A"></photoapp-emoji-slider>',
        "linear-gradient(#fbc2eb,#a6c1ee)",
    ),
}


@pytest.mark.parametrize("name", sorted(PAGES))
async def test_stickers_look_like_the_reference(
    render: render_pb2_grpc.RenderServiceAsyncStub, name: str
) -> None:
    stickers, background = PAGES[name]
    rendering, jpeg = await render_image(render, story_page(stickers, background=background))
    assert list(rendering.warnings) == [], "reference pages are valid and do not overlap"
    assert probe(jpeg) == {"codec_name": "mjpeg", "width": "1080", "height": "1920"} | {
        "duration": probe(jpeg).get("duration", "N/A")
    }
    expected_kinds = stickers.count("<photoapp-")
    assert len(rendering.stickers) == expected_kinds
    for sticker in rendering.stickers:
        if sticker.kind in ("hashtag", "mention", "location", "link"):
            assert sticker.height == 177, "pill stickers are 177 px tall"
    actual = decode_rgb(jpeg)
    ref = REFS / f"{name}.png"
    if UPDATE:
        write_png(actual, ref)
        return
    assert ref.exists(), f"no reference image {ref.name}; run with STORYPOST_UPDATE_RENDER_REFS=1"
    diff = difference(actual, decode_rgb(ref.read_bytes()))
    if diff.mean > MAX_MEAN or diff.strong > MAX_STRONG:
        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"render-{name}-actual.png"
        write_png(actual, out)
        pytest.fail(f"{name} differs from its reference ({diff}); this run's image: {out}")


async def test_a_focused_fields_caret_is_not_captured(
    render: render_pb2_grpc.RenderServiceAsyncStub,
) -> None:
    """A design with a focused text field: its caret (red, wide, styled with a strong
    selector of the page's own) must not show in the image, however the blink falls."""
    field = (
        '<textarea id="f" autofocus style="width:900px;height:600px;font-size:400px;'
        'border:0;outline:0;background:#fff;color:#fff"></textarea>'
        "<style>#f#f#f { caret-color: #f00 !important; }</style>"
        "<script>document.getElementById('f').focus()</script>"
    )
    for _ in range(3):
        _, jpeg = await render_image(render, story_page(field, background="#fff"))
        rgb = decode_rgb(jpeg, 1080, 1920)
        red = sum(
            1
            for i in range(0, len(rgb), 3)
            # JPEG blurs a one-pixel red line into pink: any pixel clearly redder than grey.
            if rgb[i] - max(rgb[i + 1], rgb[i + 2]) > 40
        )
        assert red == 0, f"{red} red pixels: the caret was captured"
