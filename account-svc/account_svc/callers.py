"""Which callers each restricted account-svc procedure answers (the rest answer any signed caller).

Procedures that hand out or act with secrets answer only the component that needs them:
platform access tokens only publish-svc (it publishes), sign-in, sessions, the app's user
management, API keys and connect-link tokens only the edge (and the operator's CLI where
`storypost admin` needs them),
credits and daily reservations only publish-svc, balances and organizations only the operator.
"""

from __future__ import annotations

from storypost.account.v1 import account_pb2
from storypost_runtime.service_auth import ADMIN, EDGE, PUBLISH_SVC, restrict

SERVICE_NAME = account_pb2.DESCRIPTOR.services_by_name["AccountService"].full_name

_EDGE = frozenset({EDGE})
_PUBLISH = frozenset({PUBLISH_SVC})
_ADMIN = frozenset({ADMIN})
_EDGE_OR_ADMIN = frozenset({EDGE, ADMIN})

RESTRICTIONS = restrict(
    SERVICE_NAME,
    GetAccessToken=_PUBLISH,
    CheckAccounts=_PUBLISH,
    CreateCalendarFeed=_EDGE,
    ListCalendarFeeds=_EDGE,
    RevokeCalendarFeed=_EDGE,
    ResolveCalendarFeed=_EDGE,
    ReserveDailyPost=_PUBLISH,
    ReleaseDailyPost=_PUBLISH,
    ConsumeCredit=_PUBLISH,
    SetCredits=_ADMIN,
    CreateOrganization=_ADMIN,
    CreateUser=_ADMIN,
    Authenticate=_EDGE,
    ListRevokedCredentials=_EDGE,
    ConsumeRateLimit=_EDGE,
    VerifyUserPassword=_EDGE,
    SignIn=_EDGE,
    GetSession=_EDGE,
    EndSession=_EDGE,
    ListUsers=_EDGE,
    AddUser=_EDGE,
    RemoveUser=_EDGE,
    SetUserPassword=_EDGE,
    SetTimeZone=_EDGE,
    CreateConnectLink=_EDGE,
    GetConnectLink=_EDGE,
    ListConnectLinks=_EDGE,
    CreateApiCredential=_EDGE_OR_ADMIN,
    StartConnect=_EDGE_OR_ADMIN,
    CompleteConnect=_EDGE_OR_ADMIN,
)
