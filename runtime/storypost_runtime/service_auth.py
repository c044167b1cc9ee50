"""Who is calling: every internal gRPC call carries a short-lived token signed by its caller.

Each calling component (the edge, publish-svc, render-svc, an operator's CLI, an internal
team's client) holds its own Ed25519 signing key, written `name:key` (the credential:
`STORYPOST_SERVICE_KEY`). Servers hold only the public halves (`STORYPOST_SERVICE_PUBLIC_KEYS`,
`name:key,...`, not secret). A call carries `authorization: Bearer <JWT>` whose issuer is the
caller's name, whose audience is the gRPC service called and which lives a few minutes, so a
token seen on the wire is good for one service for a short while and no server can mint one.

The server's `CallerCheck` interceptor refuses a call without a valid token (UNAUTHENTICATED)
and a procedure that the service restricts to named callers (`GetAccessToken` answers
publish-svc only) from anyone else (PERMISSION_DENIED). Health and reflection stay open: the
kubelet's probes carry no token and reflection describes only the public protos.

PyJWT does the token format and the signature checks (EdDSA over `cryptography`).
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import grpc
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection

from storypost_runtime.component import component
from storypost_runtime.interceptors import (
    Continuation,
    Handler,
    invocation_metadata,
    unary_handler,
)
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

AUTHORIZATION_METADATA_KEY = "authorization"
_ALGORITHM = "EdDSA"
# A token lives this long; a caller signs a new one when less than a third is left.
TOKEN_SECONDS = 300
# Clocks of two pods may differ a little.
_LEEWAY_SECONDS = 30
# Verified tokens remembered by a service (see CallerVerifier).
_VERIFIED_KEPT = 1024

# The callers storypost's own components sign as (one vocabulary for launchers and policies).
EDGE = "edge"
PUBLISH_SVC = "publish-svc"
RENDER_SVC = "render-svc"
ADMIN = "admin"
CALLERS = (EDGE, PUBLISH_SVC, RENDER_SVC, ADMIN)

_OPEN_SERVICES = frozenset(
    {
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
        "grpc.reflection.v1.ServerReflection",
    }
)


class CredentialError(ValueError):
    """A credential or public key list that cannot be used; the message names the setting."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _split_named(entry: str, setting: str) -> tuple[str, bytes]:
    name, sep, encoded = entry.strip().partition(":")
    if not sep or not name or not encoded:
        raise CredentialError(f"{setting}: expected name:key, got {entry.strip()[:20]!r}…")
    try:
        raw = _unb64(encoded)
    except (binascii.Error, ValueError):
        raise CredentialError(f"{setting}: the key of {name!r} is not url-safe base64") from None
    if len(raw) != 32:
        raise CredentialError(f"{setting}: the key of {name!r} must be 32 bytes (Ed25519)")
    return name, raw


@dataclass(frozen=True)
class ServiceCredential:
    """A caller's name and signing key (`name:key`, url-safe base64 of the 32-byte seed)."""

    name: str
    key: Ed25519PrivateKey = field(repr=False)

    @classmethod
    def parse(cls, value: str, setting: str = "STORYPOST_SERVICE_KEY") -> ServiceCredential:
        name, seed = _split_named(value, setting)
        return cls(name, Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def generate(cls, name: str) -> ServiceCredential:
        return cls(name, Ed25519PrivateKey.generate())

    def secret(self) -> str:
        """The credential as the caller's STORYPOST_SERVICE_KEY holds it."""
        seed = self.key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return f"{self.name}:{_b64(seed)}"

    def public_entry(self) -> str:
        """This caller's entry of the servers' STORYPOST_SERVICE_PUBLIC_KEYS."""
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return f"{self.name}:{_b64(raw)}"


def require_outside_development(environment: str, variable: str, value: str, why: str) -> None:
    """Outside development an empty credential setting stops start-up, naming the variable."""
    if environment != "development" and not value.strip():
        raise CredentialError(
            f"{variable} is not set, and STORYPOST_ENVIRONMENT={environment} needs it: {why} "
            "(make keys: storypost keys service; docs/service-auth.md)"
        )


def caller_signer(service_key: str) -> TokenSigner | None:
    """The signer of a process's STORYPOST_SERVICE_KEY; None when it has none (development)."""
    return (
        TokenSigner(credential=ServiceCredential.parse(service_key))
        if service_key.strip()
        else None
    )


def caller_verifier(service_public_keys: str) -> CallerVerifier | None:
    """The verifier of a server's STORYPOST_SERVICE_PUBLIC_KEYS; None when empty (development)."""
    keys = parse_public_keys(service_public_keys)
    return CallerVerifier(keys) if keys else None


def parse_public_keys(
    value: str, setting: str = "STORYPOST_SERVICE_PUBLIC_KEYS"
) -> dict[str, list[Ed25519PublicKey]]:
    """`name:key,...` into keys by caller name. A name may be listed more than once (its old
    and new key while it rotates); the same entry twice is refused as a copy-paste slip."""
    keys: dict[str, list[Ed25519PublicKey]] = {}
    seen: set[str] = set()
    for entry in value.split(","):
        if not entry.strip():
            continue
        if entry.strip() in seen:
            raise CredentialError(f"{setting}: {entry.strip()[:20]!r}… is listed twice")
        seen.add(entry.strip())
        name, raw = _split_named(entry, setting)
        keys.setdefault(name, []).append(Ed25519PublicKey.from_public_bytes(raw))
    return keys


def public_keys_setting(credentials: Mapping[str, ServiceCredential]) -> str:
    """The servers' STORYPOST_SERVICE_PUBLIC_KEYS for these callers."""
    return ",".join(credential.public_entry() for credential in credentials.values())


@component
class TokenSigner:
    """Signs the tokens of one caller, one per audience, reused until a third of its life is left.

    Thread-safe: the edge's WSGI threads share one.
    """

    _: KW_ONLY
    credential: ServiceCredential
    lifetime: float = TOKEN_SECONDS
    clock: Callable[[], float] = time.time
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _tokens: dict[str, tuple[str, float]] = field(init=False, default_factory=dict)

    @property
    def caller(self) -> str:
        return self.credential.name

    def token(self, audience: str) -> str:
        now = self.clock()
        with self._lock:
            cached = self._tokens.get(audience)
            if cached is not None and cached[1] - now > self.lifetime / 3:
                return cached[0]
            expires = now + self.lifetime
            claims = {
                "iss": self.credential.name,
                "aud": audience,
                "iat": int(now),
                "exp": int(expires),
            }
            signed = jwt.encode(
                claims,
                self.credential.key,
                algorithm=_ALGORITHM,
                headers={"kid": self.credential.name},
            )
            self._tokens[audience] = (signed, expires)
            return signed

    def metadata_for(self, method: str) -> tuple[str, str]:
        """The authorization entry of a call to `/package.Service/Method`."""
        return AUTHORIZATION_METADATA_KEY, f"Bearer {self.token(service_of(method))}"


def service_of(method: str) -> str:
    """`/storypost.account.v1.AccountService/GetAccessToken` → the service's full name."""
    return method.strip("/").partition("/")[0]


class CallerRefused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CallerVerifier:
    """Checks a call's token against the callers' public keys; answers the caller's name."""

    def __init__(
        self,
        public_keys: Mapping[str, Sequence[Ed25519PublicKey]],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys = dict(public_keys)
        self.clock = clock
        # (token, service) -> (caller, exp) of tokens whose signature and claims were checked:
        # a caller reuses one token for minutes, and checking its Ed25519 signature on every
        # call was a few percent of each service's CPU. The same string verified before is
        # answered without the signature check until its expiry (same rule, same leeway).
        # A bounded OrderedDict by hand: the runtime's core install (publish-svc, webhook-svc)
        # does not carry cachetools, and expiry is per token, not one TTL for all.
        self._verified: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()

    @property
    def callers(self) -> frozenset[str]:
        return frozenset(self._keys)

    def caller(self, authorization: str | None, service: str) -> str:
        if not authorization or not authorization.startswith("Bearer "):
            raise CallerRefused(
                grpc.StatusCode.UNAUTHENTICATED, "this service answers signed callers only"
            )
        token = authorization.removeprefix("Bearer ").strip()
        known = self._verified.get((token, service))
        if known is not None and self._unexpired(known[1]):
            return known[0]
        try:
            name = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            name = None
        keys = self._keys.get(name, ()) if isinstance(name, str) else ()
        if not keys or not isinstance(name, str):
            raise CallerRefused(grpc.StatusCode.UNAUTHENTICATED, "unknown caller")
        claims = self._claims(token, name, keys, service)
        expires = float(claims["exp"])
        # An expiry further away than a token may live is a token not signed by our signer.
        if expires - self.clock() > TOKEN_SECONDS + _LEEWAY_SECONDS:
            raise CallerRefused(grpc.StatusCode.UNAUTHENTICATED, "caller token lives too long")
        # PyJWT checked the expiry against the system clock; the cache above uses ours.
        if not self._unexpired(expires):
            raise CallerRefused(grpc.StatusCode.UNAUTHENTICATED, "caller token expired")
        self._remember((token, service), name, expires)
        return name

    def _unexpired(self, expires: float) -> bool:
        return self.clock() < expires + _LEEWAY_SECONDS

    def _remember(self, key: tuple[str, str], name: str, expires: float) -> None:
        self._verified[key] = (name, expires)
        # A few live tokens per caller and audience; the bound only stops a flood of
        # distinct valid tokens from growing the map.
        while len(self._verified) > _VERIFIED_KEPT:
            self._verified.popitem(last=False)

    def _claims(
        self, token: str, name: str, keys: Sequence[Ed25519PublicKey], service: str
    ) -> dict[str, Any]:
        """The token's claims under the first of the caller's keys that verifies it."""
        error: jwt.PyJWTError | None = None
        for key in keys:
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key,
                    algorithms=[_ALGORITHM],
                    audience=service,
                    issuer=name,
                    leeway=_LEEWAY_SECONDS,
                    options={"require": ["exp", "iat", "aud", "iss"]},
                )
                return claims
            except jwt.InvalidSignatureError as bad_signature:
                error = bad_signature  # perhaps the caller's other key (it is rotating)
            except jwt.PyJWTError as refused:
                error = refused
                break
        raise CallerRefused(grpc.StatusCode.UNAUTHENTICATED, f"caller token refused: {error}")


# Full method path → the only callers it answers; every other procedure answers any signed
# caller.
Restrictions = Mapping[str, frozenset[str]]


def restrict(service: str, **methods: frozenset[str]) -> dict[str, frozenset[str]]:
    """A service's restrictions, written by method name."""
    return {f"/{service}/{method}": callers for method, callers in methods.items()}


class CallerCheck(grpc.aio.ServerInterceptor):
    """Refuses calls without a valid caller token, and restricted procedures to other callers.

    With no verifier (development without keys) every call passes; `serve()` logs that.
    """

    def __init__(self, verifier: CallerVerifier | None, restrictions: Restrictions) -> None:
        self._verifier = verifier
        self._restrictions = dict(restrictions)

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        method: str = handler_call_details.method
        service = service_of(method)
        if self._verifier is None or service in _OPEN_SERVICES:
            return await continuation(handler_call_details)
        authorization = invocation_metadata(handler_call_details).get(AUTHORIZATION_METADATA_KEY)
        try:
            caller = self._verifier.caller(
                authorization if isinstance(authorization, str) else None, service
            )
            allowed = self._restrictions.get(method)
            if allowed is not None and caller not in allowed:
                raise CallerRefused(
                    grpc.StatusCode.PERMISSION_DENIED, f"{caller} may not call {method}"
                )
        except CallerRefused as refused:
            log.warning("call refused", method=method, code=refused.code.name)
            handler = await continuation(handler_call_details)
            return _refusal(handler, refused)
        return await continuation(handler_call_details)


def _refusal(handler: Handler | None, refused: CallerRefused) -> Handler:
    async def abort(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(refused.code, refused.message)

    return unary_handler(abort, like=handler)
