"""Story component rules: every warning kind, defaults, sticker geometry."""

from __future__ import annotations

import pytest

from render_svc.stickers import Box, RawElement, place_stickers, plan_page


def element(index: int, tag: str, **attributes: str) -> RawElement:
    return RawElement(index, tag, tuple((k.replace("_", "-"), v) for k, v in attributes.items()))


def test_valid_stickers_keep_their_attributes_and_draw_with_defaults() -> None:
    page = plan_page(
        [
            element(0, "photoapp-story"),
            element(1, "photoapp-hashtag", hashtag="#SummerSale", design="Rainbow"),
            element(2, "photoapp-poll", question="Which?"),
            element(3, "photoapp-countdown", end_time="2026-07-05T22:00:00Z"),
            element(4, "photoapp-emoji-slider", style="top:0", data_x="1", aria_label="a"),
        ]
    )
    assert page.warnings == []
    assert page.video_src is None
    hashtag, poll, countdown, slider = page.stickers
    assert hashtag.values == {"hashtag": "SummerSale", "design": "rainbow"}
    assert hashtag.attributes == {"hashtag": "#SummerSale", "design": "Rainbow"}
    assert poll.values["options"] == ["Yes", "No"] and poll.values["color"] == "black"
    assert "options" not in poll.attributes
    assert countdown.values["title"] == "Countdown"
    assert countdown.values["end-time"] == 1783288800000
    assert slider.values == {
        "question": None,
        "emoji": "\N{SMILING FACE WITH HEART-SHAPED EYES}",
        "color": "#FFFFFF",
        "text-color": "#262626",
    }


def test_unknown_elements_and_attributes_are_reported() -> None:
    page = plan_page(
        [
            element(0, "photoapp-sticker", text="x"),
            element(1, "photoapp-poll", options='["A","B"]', colour="pink"),
            element(2, "photoapp-story", src="https://cdn.example.com/v.mp4", autoplay=""),
        ]
    )
    assert page.warnings == [
        "unknown element <photoapp-sticker> is ignored",
        'unknown attribute "colour" on <photoapp-poll> #1 is ignored',
        'unknown attribute "autoplay" on <photoapp-story> #1 is ignored',
    ]
    assert page.video_src == "https://cdn.example.com/v.mp4"
    assert [p.kind for p in page.stickers] == ["poll"]


@pytest.mark.parametrize(
    ("tag", "attributes", "warning"),
    [
        (
            "photoapp-hashtag",
            {"hashtag": "sale", "design": "black"},
            'invalid design "black" on <photoapp-hashtag> #1: allowed: default, gray, rainbow; '
            "using default",
        ),
        (
            "photoapp-mention",
            {"username": "a", "design": "orange"},
            'invalid design "orange" on <photoapp-mention> #1: allowed: default, gray, rainbow; '
            "using default",
        ),
        (
            "photoapp-location",
            {"location": "Paris", "design": "pink"},
            'invalid design "pink" on <photoapp-location> #1: allowed: default, gray, black, '
            "orange, rainbow; using default",
        ),
        (
            "photoapp-location",
            {"location": "Paris", "location_id": "paris"},
            'invalid location-id "paris" on <photoapp-location> #1: must be the numeric id of '
            "the place; it is left out",
        ),
        (
            "photoapp-link",
            {"url": "https://a.example", "design": "orange"},
            'invalid design "orange" on <photoapp-link> #1: allowed: default, gray, black, '
            "rainbow; using default",
        ),
        (
            "photoapp-poll",
            {"options": '["only one"]'},
            'invalid options "[\\"only one\\"]" on <photoapp-poll> #1: must be a JSON array of 2 '
            'to 4 non-empty strings, e.g. ["Yes","No"]; using ["Yes", "No"]',
        ),
        (
            "photoapp-poll",
            {"options": '["A","B"]', "color": "red"},
            'invalid color "red" on <photoapp-poll> #1: allowed: black, pink, lavender, purple, '
            "orange, green, blue; using black",
        ),
        (
            "photoapp-question",
            {"color": "yellow"},
            'invalid color "yellow" on <photoapp-question> #1: allowed: white, black, pink, '
            "lavender, purple, orange, green, blue; using white",
        ),
        (
            "photoapp-quiz",
            {"options": '["A","B","C"]', "correct_answer": "first"},
            'invalid correct-answer "first" on <photoapp-quiz> #1: must be the zero-based index '
            "of an option; it is left out",
        ),
        (
            "photoapp-quiz",
            {"options": '["A","B","C"]', "correct_answer": "3"},
            'invalid correct-answer "3" on <photoapp-quiz> #1: must be the zero-based index of '
            "an option (0 to 2); it is left out",
        ),
        (
            "photoapp-countdown",
            {"end_time": "2026-07-05T22:00:00Z", "color": "pink"},
            'invalid color "pink" on <photoapp-countdown> #1: allowed: black, white, purple, '
            "red, orange, yellow, green, blue; using black",
        ),
        (
            "photoapp-emoji-slider",
            {"color": "red"},
            'invalid color "red" on <photoapp-emoji-slider> #1: must be a hex colour such as '
            "#FF0080; using #FFFFFF",
        ),
        (
            "photoapp-emoji-slider",
            {"text_color": "#12345"},
            'invalid text-color "#12345" on <photoapp-emoji-slider> #1: must be a hex colour '
            "such as #FF0080; using #262626",
        ),
        (
            "photoapp-emoji-slider",
            {"emoji": "two words"},
            'invalid emoji "two words" on <photoapp-emoji-slider> #1: must be one emoji; using '
            "\N{SMILING FACE WITH HEART-SHAPED EYES}",
        ),
    ],
)
def test_invalid_values_are_reported_and_replaced(
    tag: str, attributes: dict[str, str], warning: str
) -> None:
    page = plan_page([element(0, tag, **attributes)])
    assert page.warnings == [warning]
    assert len(page.stickers) == 1, "an optional attribute's bad value keeps the sticker"
    name = warning.split(" ")[1]
    assert name not in page.stickers[0].attributes


@pytest.mark.parametrize(
    ("tag", "attributes", "warning"),
    [
        ("photoapp-hashtag", {}, "<photoapp-hashtag> #1 has no hashtag attribute"),
        ("photoapp-mention", {}, "<photoapp-mention> #1 has no username attribute"),
        ("photoapp-location", {}, "<photoapp-location> #1 has no location attribute"),
        ("photoapp-link", {"text": "x"}, "<photoapp-link> #1 has no url attribute"),
        ("photoapp-quiz", {"question": "q"}, "<photoapp-quiz> #1 has no options attribute"),
        ("photoapp-countdown", {"title": "t"}, "<photoapp-countdown> #1 has no end-time"),
        ("photoapp-hashtag", {"hashtag": "two words"}, 'invalid hashtag "two words"'),
        ("photoapp-hashtag", {"hashtag": "2026"}, 'invalid hashtag "2026"'),
        ("photoapp-mention", {"username": "no spaces"}, 'invalid username "no spaces"'),
        ("photoapp-link", {"url": "javascript:alert(1)"}, 'invalid url "javascript:alert(1)"'),
        ("photoapp-quiz", {"options": "A, B"}, 'invalid options "A, B"'),
        ("photoapp-quiz", {"options": "[1, 2]"}, 'invalid options "[1, 2]"'),
        ("photoapp-countdown", {"end_time": "tomorrow"}, 'invalid end-time "tomorrow"'),
        ("photoapp-countdown", {"end_time": "2026-07-05"}, 'invalid end-time "2026-07-05"'),
        (
            "photoapp-countdown",
            {"end_time": "2026-07-05T22:00:00"},
            'invalid end-time "2026-07-05T22:00:00"',
        ),
    ],
)
def test_a_sticker_without_a_valid_required_attribute_is_ignored(
    tag: str, attributes: dict[str, str], warning: str
) -> None:
    page = plan_page([element(0, tag, **attributes)])
    assert len(page.warnings) == 1
    assert page.warnings[0].startswith(warning)
    assert page.warnings[0].endswith("the sticker is ignored")
    assert page.stickers == []


def test_nested_stickers_extra_stories_and_page_shadow_roots() -> None:
    page = plan_page(
        [
            element(0, "photoapp-story", src="https://a.example/1.mp4"),
            element(1, "photoapp-story", src="https://a.example/2.mp4"),
            element(2, "photoapp-hashtag", hashtag="outer"),
            RawElement(3, "photoapp-hashtag", (("hashtag", "inner"),), nested=True),
            RawElement(4, "photoapp-mention", (("username", "me"),), page_shadow=True),
        ]
    )
    assert page.video_src == "https://a.example/1.mp4"
    assert page.warnings == [
        "<photoapp-story> #2: only the first <photoapp-story> is used",
        "<photoapp-hashtag> #2 is inside another sticker and is ignored",
        "<photoapp-mention> #1 already has a shadow root from the page; it is kept as the page "
        "drew it",
    ]
    assert [p.kind for p in page.stickers] == ["hashtag", "mention"]
    assert [p.kind for p in page.mentions] == ["mention"]


def test_quiz_correct_answer_is_a_zero_based_index() -> None:
    page = plan_page([element(0, "photoapp-quiz", options='["A","B","C"]', correct_answer="0")])
    assert page.warnings == []
    assert page.stickers[0].values["correct-answer"] == 0
    assert page.stickers[0].attributes["correct-answer"] == "0"


def test_overlaps_name_both_stickers_and_geometry_is_clipped_to_the_canvas() -> None:
    page = plan_page(
        [
            element(0, "photoapp-hashtag", hashtag="a"),
            element(1, "photoapp-poll"),
            element(2, "photoapp-link", url="https://a.example"),
            element(3, "photoapp-mention", username="gone"),
            element(4, "photoapp-location", location="far away"),
        ]
    )
    boxes = {
        0: Box(100, 100, 500, 177),
        1: Box(300, 200, 800, 400),  # overlaps the hashtag, sticks out on the right
        2: Box(100, 1500, 500, 177),
        3: None,  # display: none
        4: Box(1200, 100, 400, 177),  # entirely off the canvas
    }
    stickers, warnings = place_stickers(page.stickers, boxes)
    assert warnings == [
        "<photoapp-poll> #1 extends beyond the 1080x1920 canvas",
        "<photoapp-mention> #1 is not visible on the canvas and is ignored",
        "<photoapp-location> #1 is not visible on the canvas and is ignored",
        "stickers overlap: <photoapp-hashtag> #1 and <photoapp-poll> #1",
    ]
    assert [(s.kind, s.x, s.y, s.width, s.height) for s in stickers] == [
        ("hashtag", 100, 100, 500, 177),
        ("poll", 300, 200, 780, 400),
        ("link", 100, 1500, 500, 177),
    ]


def test_touching_stickers_do_not_overlap() -> None:
    page = plan_page(
        [element(0, "photoapp-hashtag", hashtag="a"), element(1, "photoapp-hashtag", hashtag="b")]
    )
    _stickers, warnings = place_stickers(
        page.stickers, {0: Box(0, 0, 500, 177), 1: Box(0, 177, 500, 177)}
    )
    assert warnings == []
