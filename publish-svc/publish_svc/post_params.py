"""Each post kind's own request fields, typed: made once from the schedule request (where the
defaults are applied), completed by the intake, stored as the post's camelCase `params`.

A field is stored under the camelCase of its name (`storypost_runtime.documents`), in the
order declared here; an optional field (default None) is stored only when set.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.documents import camel_case, from_document
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.mongo import Document
from storypost_runtime.vocabulary import (
    CLIPAPP_DEFAULT_PRIVACY_LEVEL,
    REEL_SHARE_TO_LINKNET_DEFAULT,
    PostKind,
)


@dataclass(frozen=True)
class LinknetDestination:
    """The linknet destination a story is shared to, as chosen when it was scheduled."""

    id: str
    name: str
    type: str


@dataclass(frozen=True)
class StoryParams:
    KIND: ClassVar[PostKind] = PostKind.STORY

    ai_generated: bool
    share_to_linknet: bool
    # The destination asked for (as a string); unset: the account's first one.
    linknet_destination_id: str | None = None
    # Added by the intake: the destination chosen (only when sharing) and the account's name.
    linknet_destination: LinknetDestination | None = None
    photoapp_username: str | None = None

    @classmethod
    def of_request(cls, request: pb.ScheduleStoryRequest) -> StoryParams:
        return cls(
            ai_generated=request.ai_generated,
            share_to_linknet=request.share_to_linknet,
            linknet_destination_id=request.linknet_destination_id or None,
        )


@dataclass(frozen=True)
class ReelParams:
    KIND: ClassVar[PostKind] = PostKind.REEL

    caption: str
    share_to_feed: bool
    ai_generated: bool
    # Set to false by the intake where the account has no linknet destination.
    share_to_linknet: bool
    # Added by the intake.
    photoapp_username: str | None = None

    @classmethod
    def of_request(cls, request: pb.ScheduleReelRequest) -> ReelParams:
        return cls(
            caption=request.caption,
            share_to_feed=request.share_to_feed,
            ai_generated=request.ai_generated,
            share_to_linknet=request.share_to_linknet
            if request.HasField("share_to_linknet")
            else REEL_SHARE_TO_LINKNET_DEFAULT,
        )


@dataclass(frozen=True)
class ClipappParams:
    """A clipapp post's fields; also what a social post to clipapp asks for (`of_social`)."""

    KIND: ClassVar[PostKind] = PostKind.CLIPAPP

    title: str
    description: str
    privacy_level: str
    # None: not said (a social post's post type may not offer the toggle); a clipapp post
    # always says.
    disable_duet: bool | None
    disable_comment: bool | None
    disable_stitch: bool | None
    brand_organic: bool
    branded_content: bool
    ai_generated: bool
    auto_audio: bool
    # Unset: the first frame.
    video_cover_timestamp_ms: int | None = None
    # Added by the intake.
    clipapp_account_id: str | None = None

    @classmethod
    def of_request(cls, request: pb.ScheduleClipappPostRequest) -> ClipappParams:
        return cls(
            title=request.title,
            description=request.description,
            privacy_level=_privacy_level(request.privacy_level),
            disable_duet=request.disable_duet,
            disable_comment=request.disable_comment,
            disable_stitch=request.disable_stitch,
            brand_organic=request.brand_organic,
            branded_content=request.branded_content,
            ai_generated=request.ai_generated,
            auto_audio=request.auto_audio,
            video_cover_timestamp_ms=request.video_cover_timestamp_ms
            if request.HasField("video_cover_timestamp_ms")
            else None,
        )

    @classmethod
    def of_social(cls, social: SocialParams) -> ClipappParams:
        """The clipapp fields of a social post: its options, titled with its text."""
        options = social.options
        cover = options.get("videoCoverTimestampMs")
        return cls(
            title=options.get("title", social.text) or "",
            description=options.get("description") or "",
            privacy_level=_privacy_level(options.get("privacyLevel")),
            disable_duet=_toggle(options, "disableDuet"),
            disable_comment=_toggle(options, "disableComment"),
            disable_stitch=_toggle(options, "disableStitch"),
            brand_organic=bool(options.get("brandOrganic")),
            branded_content=bool(options.get("brandedContent")),
            ai_generated=bool(options.get("aiGenerated")),
            auto_audio=bool(options.get("autoAudio")),
            video_cover_timestamp_ms=cover if isinstance(cover, int) else None,
        )


@dataclass(frozen=True)
class SocialParams:
    KIND: ClassVar[PostKind] = PostKind.SOCIAL

    # Shortened to the post type's caption length by the intake.
    text: str
    # A JSON object; the intake checks it against the post type and fills in its defaults.
    options: dict[str, Any]
    # Added by the intake.
    post_type: str | None = None

    @classmethod
    def of_request(cls, request: pb.ScheduleSocialPostRequest) -> SocialParams:
        try:
            options = json.loads(request.options_json) if request.options_json else {}
        except ValueError:
            raise InvalidArgument("options must be a JSON object") from None
        if not isinstance(options, dict):
            raise InvalidArgument("options must be a JSON object")
        return cls(text=request.text, options=options)


type Params = StoryParams | ReelParams | ClipappParams | SocialParams
PARAMS_OF_KIND: dict[PostKind, type[Params]] = {
    cls.KIND: cls for cls in (StoryParams, ReelParams, ClipappParams, SocialParams)
}


def params_from_doc(kind: PostKind, doc: Mapping[str, Any]) -> Params:
    """A stored post's `params` document, read as its kind's params."""
    # A story's chosen linknet destination is the one record stored inside.
    destination = doc.get("linknetDestination")
    given: dict[str, Any] = {}
    if destination is not None:
        given["linknet_destination"] = from_document(LinknetDestination, destination)
    return from_document(PARAMS_OF_KIND[kind], doc, **given)


def expect[P: Params](params: Params, cls: type[P]) -> P:
    """`params` as the kind `cls` holds (a driver given another kind's post raises)."""
    if not isinstance(params, cls):
        raise TypeError(f"{type(params).__name__} given where {cls.__name__} is expected")
    return params


def params_doc(params: Params | LinknetDestination) -> Document:
    """The document stored for `params` (the post's `params` field)."""
    doc: Document = {}
    for field in dataclasses.fields(params):
        value = getattr(params, field.name)
        if value is None and field.default is None:
            continue
        doc[camel_case(field.name)] = (
            params_doc(value) if isinstance(value, LinknetDestination) else value
        )
    return doc


def _privacy_level(level: str | None) -> str:
    """A clipapp privacy level; the default where none is named."""
    return level or CLIPAPP_DEFAULT_PRIVACY_LEVEL


def _toggle(options: Mapping[str, Any], key: str) -> bool | None:
    value = options.get(key)
    return None if value is None else bool(value)
