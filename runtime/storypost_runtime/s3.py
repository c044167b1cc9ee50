"""S3 client factory (aioboto3): AWS (virtual-host addressing) or an S3-compatible store at an
endpoint URL (path-style), static keys or the default credential chain; SigV4."""

from __future__ import annotations

from typing import Any

import aioboto3
from botocore.config import Config

from storypost_runtime.settings import S3Settings


def s3_session(settings: S3Settings) -> aioboto3.Session:
    """Static keys when configured; otherwise boto's default chain (workload identity, instance
    role, AWS_* variables) finds the credentials."""
    static = bool(settings.s3_access_key)
    return aioboto3.Session(
        aws_access_key_id=settings.s3_access_key if static else None,
        aws_secret_access_key=settings.s3_secret_key if static else None,
        region_name=settings.s3_region,
    )


def s3_client_kwargs(settings: S3Settings) -> dict[str, Any]:
    """Arguments for `session.client("s3", **kwargs)` (an async context manager)."""
    # Stores of our own (SeaweedFS, MinIO) answer path-style URLs only; AWS wants
    # virtual-host addressing (path-style is deprecated there, and presigned URLs name the
    # bucket's host).
    custom = bool(settings.s3_endpoint_url)
    return {
        "endpoint_url": settings.s3_endpoint_url or None,
        "config": Config(
            signature_version="s3v4",
            s3={"addressing_style": "path" if custom else "virtual"},
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
        ),
    }
