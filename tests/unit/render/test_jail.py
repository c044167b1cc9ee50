"""The jail hands Chromium one list per feature switch (Chromium reads only the last)."""

from __future__ import annotations

from render_svc.browser.jail import merge_feature_lists


def test_every_feature_list_is_merged_into_the_first_occurrence() -> None:
    argv = [
        "/usr/bin/chromium",
        "--disable-features=A,B",
        "--headless",
        "--enable-features=X",
        "--disable-features=B,C",
        "--enable-features=Y,",
        "--mute-audio",
    ]
    assert merge_feature_lists(argv) == [
        "/usr/bin/chromium",
        "--disable-features=A,B,C",
        "--headless",
        "--enable-features=X,Y",
        "--mute-audio",
    ]


def test_a_command_line_without_feature_lists_is_left_as_it_is() -> None:
    argv = ["/usr/bin/chromium", "--headless", "--features-are-not-this=1"]
    assert merge_feature_lists(argv) == argv
