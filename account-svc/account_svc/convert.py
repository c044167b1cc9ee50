"""Proto ⇄ domain conversions of account-svc: organizations, keys, users, sessions, connect
links, connected accounts, post types, account references and daily reservations."""

from __future__ import annotations

from datetime import datetime

from google.protobuf import struct_pb2

from account_svc.connections.connect_links import ConnectLink
from account_svc.connections.connected_accounts import (
    AccountRef,
    ConnectedAccount,
)
from account_svc.connections.daily_limits import DailyReservation
from account_svc.connections.platforms import JsonScalar, OptionSpec, PostTypeSpec
from account_svc.identity.calendar_feeds import CalendarFeed
from account_svc.identity.credentials import Credential
from account_svc.identity.organizations import Organization
from account_svc.identity.sessions import Session
from account_svc.identity.users import Role, User
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp, to_datetime

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


LINK_STATUS = {"active": pb.CONNECT_LINK_STATUS_ACTIVE, "used": pb.CONNECT_LINK_STATUS_USED}
ROLE_PB: dict[Role, pb.UserRole.ValueType] = {
    "admin": pb.USER_ROLE_ADMIN,
    "member": pb.USER_ROLE_MEMBER,
}


def role_of(value: pb.UserRole.ValueType, unspecified: Role) -> Role:
    if value == pb.USER_ROLE_UNSPECIFIED:
        return unspecified
    for role, known in ROLE_PB.items():
        if known == value:
            return role
    raise InvalidArgument("unknown role")


def organization_pb(org: Organization) -> pb.Organization:
    return pb.Organization(
        organization_id=org.organization_id, name=org.name, created_at=timestamp(org.created_at)
    )


def credential_pb(cred: Credential) -> pb.ApiCredential:
    return pb.ApiCredential(
        credential_id=cred.credential_id,
        organization_id=cred.organization_id,
        name=cred.name,
        token_prefix=cred.token_prefix,
        created_at=timestamp(cred.created_at),
        last_used_at=timestamp(cred.last_used_at),
        revoked_at=timestamp(cred.revoked_at),
    )


def calendar_feed_pb(feed: CalendarFeed) -> pb.CalendarFeed:
    return pb.CalendarFeed(
        feed_id=feed.feed_id,
        organization_id=feed.organization_id,
        name=feed.name,
        created_at=timestamp(feed.created_at),
        revoked_at=timestamp(feed.revoked_at),
    )


def user_pb(user: User) -> pb.User:
    return pb.User(
        user_id=user.user_id,
        organization_id=user.organization_id,
        email=user.email,
        created_at=timestamp(user.created_at),
        role=ROLE_PB[user.role],
        time_zone=user.time_zone,
    )


def link_pb(link: ConnectLink) -> pb.ConnectLink:
    return pb.ConnectLink(
        connect_link_uuid=link.connect_link_uuid,
        organization_id=link.organization_id,
        token=link.token,
        description=link.description,
        status=LINK_STATUS[link.status],
        created_at=timestamp(link.created_at),
        used_at=timestamp(link.used_at),
        social_account_id=link.social_account_id,
    )


def session_pb(session: Session) -> pb.AppSession:
    return pb.AppSession(
        session_id=session.session_id,
        organization_id=session.organization_id,
        user_id=session.user_id,
        email=session.email,
        created_at=timestamp(session.created_at),
        expires_at=timestamp(session.expires_at),
        role=ROLE_PB[session.role],
        time_zone=session.time_zone,
    )


def reservation_pb(reservation: DailyReservation) -> pb.DailyPostReservation:
    message = pb.DailyPostReservation(
        reserved=reservation.reserved,
        day=reservation.day,
        used=reservation.used,
        already_reserved=reservation.already_reserved,
        platform=reservation.account.platform.name,
        platform_account_id=reservation.account.platform_account_id,
    )
    if reservation.limit is not None:
        message.limit = reservation.limit
    return message


def post_date(request: pb.DailyPostRequest) -> datetime:
    if not request.HasField("post_date"):
        raise InvalidArgument("post_date is required")
    return to_datetime(request.post_date)
