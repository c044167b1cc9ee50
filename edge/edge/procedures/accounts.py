"""Handlers of the account listings and create-connect-link (account-svc)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import struct_pb2
from google.protobuf.message import Message

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.vocabulary import CLIPAPP, PHOTOAPP

CONNECTION_NAMES = {pb.CONNECTION_DIRECT: "direct", pb.CONNECTION_SOCIAL: "social"}
CLIPAPP_NAME_MAX = 100


def connect_link_url(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/connect/{token}"


def _number(value: float) -> int | float:
    return int(value) if value.is_integer() else value


def _scalar(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        return _number(value.number_value)
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


# Optional proto fields shown when set: (proto field, JSON name, how its value is shown).
OptionalFields = tuple[tuple[str, str, Callable[[Any], Any]], ...]
OPTION_FIELDS: OptionalFields = (
    ("default_value", "default", _scalar),
    ("minimum", "minimum", _number),
    ("maximum", "maximum", _number),
    ("max_length", "maxLength", int),
)
DURATION_FIELDS: OptionalFields = (
    ("min_duration_seconds", "minDurationSeconds", _number),
    ("max_duration_seconds", "maxDurationSeconds", _number),
)


def _destinations(account: pb.ConnectedAccount) -> list[JsonObject]:
    return [
        {
            "linknetDestinationId": d.id,
            "linknetDestinationName": d.name,
            "linknetDestinationType": d.type,
        }
        for d in account.linknet_destinations
    ]


def photoapp_user(account: pb.ConnectedAccount) -> JsonObject:
    user: JsonObject = {
        "photoappId": account.platform_account_id,
        "photoappUsername": account.username,
    }
    if account.linknet_destinations:
        user["linknetDestinations"] = _destinations(account)
    return user


def clipapp_account(account: pb.ConnectedAccount) -> JsonObject:
    name = account.display_name or account.username or account.platform_account_id
    found: JsonObject = {
        "clipappAccountId": account.platform_account_id,
        "clipappAccountName": name[:CLIPAPP_NAME_MAX],
    }
    if account.profile_picture_url:
        found["profilePictureUrl"] = account.profile_picture_url
    return found


def _set_fields(message: Message, fields: OptionalFields) -> JsonObject:
    """The optional fields `message` has set, under their JSON names, in the table's order."""
    return {
        key: convert(getattr(message, name))
        for name, key, convert in fields
        if message.HasField(name)
    }


def option_json(option: pb.PostTypeOption) -> JsonObject:
    data: JsonObject = {
        "type": option.type,
        "description": option.description,
        "required": option.required,
    }
    if option.enum_values:
        data["enum"] = [_scalar(v) for v in option.enum_values]
    return data | _set_fields(option, OPTION_FIELDS)


def post_type_json(post_type: pb.PostType) -> JsonObject:
    return {
        "postType": post_type.post_type,
        "procedure": post_type.procedure,
        "media": post_type.media,
        **_set_fields(post_type, DURATION_FIELDS),
        "captionPublished": post_type.caption_published,
        "captionRequired": post_type.caption_required,
        "maxCaptionLength": post_type.max_caption_length,
        "options": {key: option_json(post_type.options[key]) for key in sorted(post_type.options)},
    }


def social_account(account: pb.ConnectedAccount) -> JsonObject:
    connection = CONNECTION_NAMES.get(account.connection, "social")
    data: JsonObject = {
        "socialAccountId": account.social_account_id,
        "platform": account.platform,
        "connection": connection,
        "displayName": account.display_name or account.username,
    }
    if account.username:
        data["username"] = account.username
    if account.profile_picture_url:
        data["profilePictureUrl"] = account.profile_picture_url
    data["disconnected"] = account.disconnected
    if account.disconnected and account.disconnect_reason:
        data["disconnectReason"] = account.disconnect_reason
    if connection == "direct" and account.platform == PHOTOAPP.name:
        data["photoappUsername"] = account.username
    if connection == "direct" and account.platform == CLIPAPP.name:
        data["clipappAccountId"] = account.platform_account_id
    if account.linknet_destinations:
        data["linknetDestinations"] = _destinations(account)
    if account.HasField("daily_post_limit"):
        data["dailyPostLimit"] = account.daily_post_limit
    if account.post_types:
        data["postTypes"] = [post_type_json(p) for p in account.post_types]
    return data


@component
class AccountProcedures:
    """Connected accounts and connect links (account-svc); each public method is the
    procedure of its name."""

    backends: Backends
    settings: EdgeSettings

    def _listed(
        self,
        ctx: CallContext,
        platform: str = "",
        connection: pb.Connection.ValueType = pb.CONNECTION_UNSPECIFIED,
    ) -> list[pb.ConnectedAccount]:
        reply = self.backends.account_stub.ListConnectedAccounts(
            pb.ListConnectedAccountsRequest(
                organization_id=ctx.organization_id,
                platform=platform,
                connection=connection,
            )
        )
        return list(reply.accounts)

    @procedure("list-photoapp-users")
    def list_photoapp_users(self, ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        found = self._listed(ctx, PHOTOAPP.name, pb.CONNECTION_DIRECT)
        return {"photoappUsers": [photoapp_user(a) for a in found]}

    @procedure("list-clipapp-accounts")
    def list_clipapp_accounts(self, ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        found = self._listed(ctx, CLIPAPP.name, pb.CONNECTION_DIRECT)
        return {"clipappAccounts": [clipapp_account(a) for a in found]}

    @procedure("list-social-accounts")
    def list_social_accounts(self, ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        return {"socialAccounts": [social_account(a) for a in self._listed(ctx)]}

    @procedure("create-connect-link")
    def create_connect_link(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        link = self.backends.account_stub.CreateConnectLink(
            pb.CreateConnectLinkRequest(
                organization_id=ctx.organization_id,
                connect_link_uuid=params["connectLinkUuid"],
                description=params.get("description", ""),
            )
        )
        return {
            "connectLinkUuid": link.connect_link_uuid,
            "connectLinkUrl": connect_link_url(self.settings.public_url, link.token),
        }


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(AccountProcedures(backends, settings))
