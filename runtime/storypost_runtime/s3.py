"""S3 client factory (aioboto3) for any S3-compatible store; path-style, SigV4."""

from __future__ import annotations

from typing import Any

import aioboto3
from botocore.config import Config

from storypost_runtime.settings import S3Settings


def s3_session(settings: S3Settings) -> aioboto3.Session:
    return aioboto3.Session(
        aws_access_key_id=settings.s3_access_key,
        aws_secret_access_key=settings.s3_secret_key,
        region_name=settings.s3_region,
    )


def s3_client_kwargs(settings: S3Settings) -> dict[str, Any]:
    """Arguments for `session.client("s3", **kwargs)` (an async context manager)."""
    return {
        "endpoint_url": settings.s3_endpoint_url,
        "config": Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
        ),
    }
