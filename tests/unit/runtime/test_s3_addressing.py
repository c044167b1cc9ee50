"""Issue #22 item 5: AWS gets virtual-host addressing and the default credential chain (workload
identity) unless an endpoint URL (a store of our own) and keys are configured. Checked on the
URLs and signatures the real client makes (presigned URLs: no network needed)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from storypost_runtime.s3 import s3_client_kwargs, s3_session
from storypost_runtime.settings import DEV_S3_SECRET_KEY, S3Settings


async def presigned(settings: S3Settings) -> str:
    async with s3_session(settings).client("s3", **s3_client_kwargs(settings)) as s3:
        url: str = await s3.generate_presigned_url(
            "get_object", Params={"Bucket": "media-bucket", "Key": "a/b.jpg"}, ExpiresIn=60
        )
        return url


def credential_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["X-Amz-Credential"][0].split("/")[0]


async def test_aws_is_addressed_by_virtual_host_with_the_default_credential_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a pod's workload identity provides reaches the client through the chain (here its
    # environment source, the same chain as web identity tokens and instance roles).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMTHECHAIN")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "chain-secret")
    url = await presigned(S3Settings(s3_region="eu-west-1"))
    parts = urlsplit(url)
    assert parts.netloc == "media-bucket.s3.eu-west-1.amazonaws.com"
    assert parts.path == "/a/b.jpg"
    assert credential_of(url) == "AKIAFROMTHECHAIN"


async def test_a_store_of_our_own_is_addressed_by_path_with_its_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMTHECHAIN")
    settings = S3Settings(
        s3_endpoint_url="http://127.0.0.1:8333", s3_access_key="own", s3_secret_key="own-secret"
    )
    url = await presigned(settings)
    assert url.startswith("http://127.0.0.1:8333/media-bucket/a/b.jpg?")
    assert credential_of(url) == "own"


def test_half_an_identity_or_the_published_secret_in_production_is_refused() -> None:
    with pytest.raises(ValidationError, match="go together"):
        S3Settings(s3_access_key="own")
    with pytest.raises(ValidationError, match="STORYPOST_S3_SECRET_KEY is the published"):
        S3Settings(environment="production", s3_access_key="x", s3_secret_key=DEV_S3_SECRET_KEY)
    # Production with no keys at all: the credential chain.
    assert S3Settings(environment="production").s3_access_key == ""
