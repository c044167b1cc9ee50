"""Story component elements: attribute rules, what the page script draws, warnings, geometry."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

CANVAS_WIDTH = 1080
CANVAS_HEIGHT = 1920
PREFIX = "photoapp-"
STICKER_KINDS = (
    "hashtag",
    "mention",
    "location",
    "link",
    "poll",
    "question",
    "quiz",
    "countdown",
    "emoji-slider",
)
DEFAULT_OPTIONS = ("Yes", "No")
# HTML's own attributes: a page positions and styles stickers with them, so they are no warning.
GLOBAL_ATTRIBUTES = frozenset(
    {"id", "class", "style", "title", "lang", "dir", "hidden", "tabindex", "slot", "role"}
)
_HASHTAG = re.compile(r"^[^\W]{1,100}$")
_USERNAME = re.compile(r"^[A-Za-z0-9._]{1,30}$")
_LOCATION_ID = re.compile(r"^[0-9]{1,32}$")
_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
_INDEX = re.compile(r"^[0-9]{1,3}$")

JsonValue = Any


class Invalid(Exception):
    """An attribute value breaks its rule; the message says what is expected."""


@dataclass(frozen=True)
class Rule:
    """How one attribute is read: `parse` turns the written value into what the script uses."""

    parse: Callable[[str], JsonValue]
    expected: str
    required: bool = False
    default: JsonValue = None


def _text(value: str) -> str:
    if not value.strip():
        raise Invalid("must not be empty")
    return value.strip()


def _enum(*allowed: str) -> Rule:
    def parse(value: str) -> str:
        normalized = value.strip().lower()
        if normalized not in allowed:
            raise Invalid(f"allowed: {', '.join(allowed)}")
        return normalized

    return Rule(parse, f"one of {', '.join(allowed)}", default=allowed[0])


def _hashtag(value: str) -> str:
    tag = value.strip().removeprefix("#")
    if not _HASHTAG.match(tag) or tag.isdigit():
        raise Invalid("must be letters, digits and underscores (not only digits)")
    return tag


def _username(value: str) -> str:
    name = value.strip().removeprefix("@")
    if not _USERNAME.match(name):
        raise Invalid("must be 1 to 30 letters, digits, periods and underscores")
    return name


def _location_id(value: str) -> str:
    if not _LOCATION_ID.match(value.strip()):
        raise Invalid("must be the numeric id of the place")
    return value.strip()


def _http_url(value: str) -> str:
    url = value.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid("must be an http or https URL")
    return url


def _options(value: str) -> list[str]:
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if (
        not isinstance(parsed, list)
        or not 2 <= len(parsed) <= 4
        or not all(isinstance(item, str) and item.strip() for item in parsed)
    ):
        raise Invalid('must be a JSON array of 2 to 4 non-empty strings, e.g. ["Yes","No"]')
    return [item.strip() for item in parsed]


def _date_time(value: str) -> int:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None or "T" not in value.upper():
        raise Invalid("must be an ISO 8601 date-time with a zone, e.g. 2026-07-05T22:00:00Z")
    return int(moment.timestamp() * 1000)


def _hex(value: str) -> str:
    if not _HEX.match(value.strip()):
        raise Invalid("must be a hex colour such as #FF0080")
    return value.strip().upper()


def _emoji(value: str) -> str:
    emoji = value.strip()
    if not emoji or len(emoji) > 16 or any(ch.isspace() for ch in emoji):
        raise Invalid("must be one emoji")
    return emoji


def _index(value: str) -> int:
    if not _INDEX.match(value.strip()):
        raise Invalid("must be the zero-based index of an option")
    return int(value.strip())


_DESIGN_3 = ("default", "gray", "rainbow")
RULES: Mapping[str, Mapping[str, Rule]] = {
    "story": {"src": Rule(_http_url, "an http or https video URL")},
    "hashtag": {
        "hashtag": Rule(_hashtag, "a hashtag", required=True),
        "design": _enum(*_DESIGN_3),
    },
    "mention": {
        "username": Rule(_username, "a photoapp username", required=True),
        "design": _enum(*_DESIGN_3),
    },
    "location": {
        "location": Rule(_text, "the place's name", required=True),
        "location-id": Rule(_location_id, "a numeric place id"),
        "design": _enum("default", "gray", "black", "orange", "rainbow"),
    },
    "link": {
        "url": Rule(_http_url, "an http or https URL", required=True),
        "text": Rule(_text, "the text shown"),
        "design": _enum("default", "gray", "black", "rainbow"),
    },
    "poll": {
        "question": Rule(_text, "the question"),
        "options": Rule(_options, "a JSON array of strings", default=list(DEFAULT_OPTIONS)),
        "color": _enum("black", "pink", "lavender", "purple", "orange", "green", "blue"),
    },
    "question": {
        "question": Rule(_text, "the question", default="Ask me a question"),
        "color": _enum("white", "black", "pink", "lavender", "purple", "orange", "green", "blue"),
    },
    "quiz": {
        "question": Rule(_text, "the question"),
        "options": Rule(_options, "a JSON array of strings", required=True),
        "correct-answer": Rule(_index, "the zero-based index of the right option"),
    },
    "countdown": {
        "title": Rule(_text, "the title", default="Countdown"),
        "end-time": Rule(_date_time, "an ISO 8601 date-time", required=True),
        "color": _enum("black", "white", "purple", "red", "orange", "yellow", "green", "blue"),
    },
    "emoji-slider": {
        "question": Rule(_text, "the question"),
        "emoji": Rule(_emoji, "one emoji", default="\N{SMILING FACE WITH HEART-SHAPED EYES}"),
        "color": Rule(_hex, "a hex colour", default="#FFFFFF"),
        "text-color": Rule(_hex, "a hex colour", default="#262626"),
    },
}


@dataclass(frozen=True)
class RawElement:
    """One `<photoapp-*>` element as the page script found it, in document order."""

    index: int
    tag: str
    attributes: tuple[tuple[str, str], ...]
    # Inside another sticker, whose shadow root hides it.
    nested: bool = False
    # The page attached a shadow root already, so our drawing cannot replace it.
    page_shadow: bool = False

    @classmethod
    def from_js(cls, raw: Mapping[str, Any]) -> RawElement:
        return cls(
            index=int(raw["index"]),
            tag=str(raw["tag"]).lower(),
            attributes=tuple((str(k).lower(), str(v)) for k, v in raw.get("attributes", [])),
            nested=bool(raw.get("nested")),
            page_shadow=bool(raw.get("pageShadow")),
        )


@dataclass
class Plan:
    """A sticker to draw: its index in the page, kind, parsed values and valid attributes."""

    index: int
    kind: str
    label: str
    # Values the script draws with (defaults filled in).
    values: dict[str, JsonValue]
    # The valid known attributes as written, for the extracted sticker.
    attributes: dict[str, str]
    page_shadow: bool = False
    photoapp_user_id: str = ""

    def to_js(self) -> dict[str, JsonValue]:
        return {"index": self.index, "kind": self.kind, "values": self.values}


@dataclass
class PagePlan:
    """What the page holds: stickers to draw, the story's video source, warnings so far."""

    stickers: list[Plan] = field(default_factory=list)
    video_src: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def mentions(self) -> list[Plan]:
        return [plan for plan in self.stickers if plan.kind == "mention"]


def _is_global(name: str) -> bool:
    return name in GLOBAL_ATTRIBUTES or name.startswith(("data-", "aria-"))


def _quote(value: str, limit: int = 40) -> str:
    shown = value if len(value) <= limit else value[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"
    return json.dumps(shown, ensure_ascii=False)


def plan_page(elements: Sequence[RawElement]) -> PagePlan:
    """Reads every element's attributes by the rules; collects warnings in document order."""
    page = PagePlan()
    counts: dict[str, int] = {}
    story_seen = False
    for element in elements:
        kind = element.tag.removeprefix(PREFIX)
        if kind not in RULES:
            page.warnings.append(f"unknown element <{element.tag}> is ignored")
            continue
        counts[kind] = counts.get(kind, 0) + 1
        label = f"<{element.tag}> #{counts[kind]}"
        if element.nested:
            page.warnings.append(f"{label} is inside another sticker and is ignored")
            continue
        values, attributes, usable = _read_attributes(kind, label, element, page.warnings)
        if kind == "story":
            if story_seen:
                page.warnings.append(f"{label}: only the first <photoapp-story> is used")
            else:
                story_seen = True
                page.video_src = attributes.get("src")
            continue
        if not usable:
            continue
        _check_answer(kind, label, values, attributes, page.warnings)
        if element.page_shadow:
            page.warnings.append(
                f"{label} already has a shadow root from the page; it is kept as the page drew it"
            )
        page.stickers.append(
            Plan(element.index, kind, label, values, attributes, page_shadow=element.page_shadow)
        )
    return page


def _read_attributes(
    kind: str, label: str, element: RawElement, warnings: list[str]
) -> tuple[dict[str, JsonValue], dict[str, str], bool]:
    rules = RULES[kind]
    written = dict(element.attributes)
    values: dict[str, JsonValue] = {}
    attributes: dict[str, str] = {}
    usable = True
    for name, _value in element.attributes:
        if name not in rules and not _is_global(name):
            warnings.append(f"unknown attribute {_quote(name)} on {label} is ignored")
    for name, rule in rules.items():
        if name not in written:
            if rule.required:
                warnings.append(f"{label} has no {name} attribute; the sticker is ignored")
                usable = False
            values[name] = rule.default
            continue
        try:
            values[name] = rule.parse(written[name])
        except Invalid as error:
            if rule.required:
                outcome = "the sticker is ignored"
                usable = False
            elif rule.default is not None:
                outcome = f"using {_describe_default(rule.default)}"
            else:
                outcome = "it is left out"
            warnings.append(
                f"invalid {name} {_quote(written[name])} on {label}: {error}; {outcome}"
            )
            values[name] = rule.default
            continue
        attributes[name] = written[name]
    return values, attributes, usable


def _describe_default(default: JsonValue) -> str:
    if isinstance(default, list):
        return json.dumps(default, ensure_ascii=False)
    return str(default)


def _check_answer(
    kind: str,
    label: str,
    values: dict[str, JsonValue],
    attributes: dict[str, str],
    warnings: list[str],
) -> None:
    """`correct-answer` is the zero-based index of an option: it must name one."""
    if kind != "quiz" or values.get("correct-answer") is None:
        return
    options = values.get("options") or []
    answer = values["correct-answer"]
    if answer >= len(options):
        warnings.append(
            f"invalid correct-answer {_quote(attributes['correct-answer'])} on {label}: must be "
            f"the zero-based index of an option (0 to {len(options) - 1}); it is left out"
        )
        values["correct-answer"] = None
        attributes.pop("correct-answer", None)


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float

    def area_with(self, other: Box) -> float:
        width = min(self.x + self.width, other.x + other.width) - max(self.x, other.x)
        height = min(self.y + self.height, other.y + other.height) - max(self.y, other.y)
        return max(0.0, width) * max(0.0, height)

    @property
    def inside_canvas(self) -> bool:
        return (
            self.x >= -0.5
            and self.y >= -0.5
            and self.x + self.width <= CANVAS_WIDTH + 0.5
            and self.y + self.height <= CANVAS_HEIGHT + 0.5
        )

    @property
    def on_canvas(self) -> Box | None:
        """The part of the box on the canvas, or None when nothing of it is."""
        left, top = max(0.0, self.x), max(0.0, self.y)
        right = min(float(CANVAS_WIDTH), self.x + self.width)
        bottom = min(float(CANVAS_HEIGHT), self.y + self.height)
        if right - left < 1 or bottom - top < 1:
            return None
        return Box(left, top, right - left, bottom - top)


@dataclass(frozen=True)
class Sticker:
    """An extracted native sticker (canvas pixels), as the photoapp driver sends it."""

    kind: str
    attributes: dict[str, str]
    x: float
    y: float
    width: float
    height: float
    photoapp_user_id: str = ""


def place_stickers(
    plans: Sequence[Plan], boxes: Mapping[int, Box | None]
) -> tuple[list[Sticker], list[str]]:
    """Stickers with their boxes (clipped to the canvas), and geometry warnings."""
    warnings: list[str] = []
    placed: list[tuple[Plan, Box]] = []
    for plan in plans:
        box = boxes.get(plan.index)
        visible = box.on_canvas if box is not None else None
        if box is None or visible is None:
            warnings.append(f"{plan.label} is not visible on the canvas and is ignored")
            continue
        if not box.inside_canvas:
            warnings.append(f"{plan.label} extends beyond the 1080x1920 canvas")
        placed.append((plan, visible))
    for i, (first, first_box) in enumerate(placed):
        for second, second_box in placed[i + 1 :]:
            if first_box.area_with(second_box) >= 1:
                warnings.append(f"stickers overlap: {first.label} and {second.label}")
    stickers = [
        Sticker(
            plan.kind,
            dict(plan.attributes),
            round(box.x, 2),
            round(box.y, 2),
            round(box.width, 2),
            round(box.height, 2),
            plan.photoapp_user_id,
        )
        for plan, box in placed
    ]
    return stickers, warnings
