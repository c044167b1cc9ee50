"""Proto ⇄ domain conversions of connected accounts, post types and account references."""

from __future__ import annotations

from google.protobuf import struct_pb2

from account_svc.connections.connected_accounts import AccountRef, ConnectedAccount
from account_svc.connections.platforms import JsonScalar, OptionSpec, PostTypeSpec
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp

CONNECTION_PB = {"direct": pb.CONNECTION_DIRECT, "social": pb.CONNECTION_SOCIAL}
CONNECTION_NAME = {pb.CONNECTION_DIRECT: "direct", pb.CONNECTION_SOCIAL: "social"}


def connection_name(value: pb.Connection.ValueType) -> str:
    """ "" for CONNECTION_UNSPECIFIED."""
    return CONNECTION_NAME.get(value, "")


def account_ref(ref: pb.AccountRef) -> AccountRef:
    which = ref.WhichOneof("ref")
    if which == "social_account_id":
        return AccountRef("id", ref.social_account_id)
    if which == "platform_username":
        if not ref.platform_username.platform:
            raise InvalidArgument("platform_username needs a platform")
        return AccountRef(
            "username", ref.platform_username.username, ref.platform_username.platform
        )
    if which == "clipapp_account_id":
        return AccountRef("clipapp", ref.clipapp_account_id)
    raise InvalidArgument("name the account: social_account_id, platform_username or clipapp id")


def _value(scalar: JsonScalar) -> struct_pb2.Value:
    value = struct_pb2.Value()
    if isinstance(scalar, bool):
        value.bool_value = scalar
    elif isinstance(scalar, int | float):
        value.number_value = float(scalar)
    else:
        value.string_value = scalar
    return value


def option_pb(spec: OptionSpec) -> pb.PostTypeOption:
    option = pb.PostTypeOption(
        type=spec.type,
        description=spec.description,
        required=spec.required,
        enum_values=[_value(v) for v in spec.enum],
    )
    if spec.default is not None:
        option.default_value.CopyFrom(_value(spec.default))
    if spec.minimum is not None:
        option.minimum = spec.minimum
    if spec.maximum is not None:
        option.maximum = spec.maximum
    if spec.max_length is not None:
        option.max_length = spec.max_length
    return option


def post_type_pb(spec: PostTypeSpec) -> pb.PostType:
    post_type = pb.PostType(
        post_type=spec.post_type,
        procedure=spec.procedure,
        media=spec.media,
        caption_published=spec.caption_published,
        caption_required=spec.caption_required,
        max_caption_length=spec.max_caption_length,
    )
    if spec.min_duration_seconds is not None:
        post_type.min_duration_seconds = spec.min_duration_seconds
    if spec.max_duration_seconds is not None:
        post_type.max_duration_seconds = spec.max_duration_seconds
    for key, option in spec.options.items():
        post_type.options[key].CopyFrom(option_pb(option))
    return post_type


def account_pb(account: ConnectedAccount) -> pb.ConnectedAccount:
    message = pb.ConnectedAccount(
        social_account_id=account.social_account_id,
        organization_id=account.organization_id,
        platform=account.platform.name,
        connection=CONNECTION_PB[account.connection],
        platform_account_id=account.platform_account_id,
        username=account.username,
        display_name=account.display_name,
        profile_picture_url=account.profile_picture_url,
        disconnected=account.disconnected,
        linknet_destinations=[
            pb.LinknetDestination(id=d.id, name=d.name, type=d.type)
            for d in account.linknet_destinations
        ],
        post_types=[post_type_pb(spec) for spec in account.post_types],
        connected_at=timestamp(account.connected_at),
        disconnected_at=timestamp(account.disconnected_at),
        disconnect_reason=account.disconnect_reason,
        deleted_at=timestamp(account.deleted_at),
    )
    if account.platform.daily_limit is not None:
        message.daily_post_limit = account.platform.daily_limit
    return message
