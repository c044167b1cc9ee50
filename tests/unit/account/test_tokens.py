"""Platform tokens: encrypted at rest, never listed, refreshed before expiry, a refused refresh
disconnects the account; the token key's settings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from account_svc.config import DEV_TOKEN_KEY, AccountSettings
from account_svc.connections.connected_accounts import AccountRef
from account_svc.connections.token_crypto import TokenCipher
from sandbox_net.switches import Switch
from storypost_runtime.errors import FailedPrecondition
from storypost_runtime.service_auth import ServiceCredential
from tests.support.accounts import TEST_TOKEN_KEY, AccountWorld
from tests.support.production import ADDRESSES


async def test_tokens_are_encrypted_at_rest_and_never_listed(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PHOTOAPP", "secretive")
    ref = AccountRef("id", account.social_account_id)
    _, token, _ = await world.parts.tokens.get(org, ref)
    assert token.startswith("sbxat.")
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None
    stored = str(raw)
    assert token not in stored
    assert "sbxat." not in stored and "sbxrt." not in stored
    # What is stored opens with the configured key only.
    assert Fernet(TEST_TOKEN_KEY).decrypt(raw["accessToken"].encode()).decode() == token
    other = TokenCipher([Fernet.generate_key().decode()])
    assert other.decrypt(raw["accessToken"]) is None
    # Listings and lookups never carry tokens.
    listed = await world.parts.accounts.list(org)
    assert token not in repr(listed)
    assert token not in repr(await world.parts.accounts.get(org, ref))


async def test_a_token_close_to_expiry_is_refreshed_and_stored(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PINBOARD", "pinner")
    ref = AccountRef("id", account.social_account_id)
    _, first, expires = await world.parts.tokens.get(org, ref)
    _, same, _ = await world.parts.tokens.get(org, ref)
    assert same == first  # still valid: no refresh
    world.clock.advance(expires - world.clock.now() - timedelta(seconds=30))
    _, refreshed, new_expiry = await world.parts.tokens.get(org, ref)
    assert refreshed != first and new_expiry > expires
    _, again, _ = await world.parts.tokens.get(org, ref)
    assert again == refreshed  # the refreshed one was stored
    _, forced, _ = await world.parts.tokens.get(org, ref, force_refresh=True)
    assert forced != refreshed


async def test_a_refused_refresh_marks_the_account_disconnected(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "CLIPAPP", "expiring")
    ref = AccountRef("id", account.social_account_id)
    world.sandbox.store.set_switch(Switch("clipapp", account.platform_account_id, "token-expired"))
    with pytest.raises(FailedPrecondition) as refused:
        await world.parts.tokens.get(org, ref, force_refresh=True)
    assert refused.value.reason == "ACCOUNT_DISCONNECTED"
    found = await world.parts.accounts.get(org, ref)
    assert found.disconnected
    assert "revoked" in found.disconnect_reason


def test_token_key_settings() -> None:
    assert AccountSettings().token_keys() == [DEV_TOKEN_KEY]
    rotated = AccountSettings(account_token_key=SecretStr(f"{TEST_TOKEN_KEY},{DEV_TOKEN_KEY}"))
    cipher = TokenCipher(rotated.token_keys())
    old = TokenCipher([DEV_TOKEN_KEY]).encrypt("old secret")
    assert cipher.decrypt(old) == "old secret"  # an old key still decrypts
    assert TokenCipher([TEST_TOKEN_KEY]).decrypt(cipher.encrypt("new")) == "new"  # first encrypts
    # Production (with the callers' keys it also needs): the development key is refused.
    callers = ServiceCredential.generate("publish-svc").public_entry()
    production = {"environment": "production", "service_public_keys": callers, **ADDRESSES}
    with pytest.raises(ValidationError, match="development key"):
        AccountSettings.model_validate(production)
    AccountSettings.model_validate(
        production
        | {
            "account_token_key": TEST_TOKEN_KEY,
            "platform_client_secret": "a-client-secret-of-our-own",
        }
    )
    with pytest.raises(ValidationError, match="32 bytes"):
        AccountSettings(account_token_key=SecretStr("not-a-key"))
    # The key never shows in the settings' repr.
    assert TEST_TOKEN_KEY not in repr(rotated)
