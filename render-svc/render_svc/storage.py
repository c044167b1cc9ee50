"""The media bucket (S3 via aioboto3): objects, presigned URLs, bucket set-up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

_MISSING = {"404", "NoSuchKey", "NotFound"}


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    content_type: str


@component
class MediaStore:
    """One bucket; `client` is an aioboto3 S3 client kept open for the service's lifetime."""

    client: Any
    bucket: str

    async def ensure_bucket(self) -> None:
        """Creates the bucket unless it exists (any replica may race to create it)."""
        try:
            await self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as error:
            if _code(error) not in _MISSING | {"NoSuchBucket"}:
                raise
        try:
            await self.client.create_bucket(Bucket=self.bucket)
        except ClientError as error:
            if _code(error) not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                raise

    async def ensure_expiry_rule(self, prefix: str, days: int) -> bool:
        """Asks the store to expire objects under `prefix`; False when it does not support it.

        Only a safety net: the sweeper deletes blobs and their records on time either way.
        """
        rule = {
            "ID": f"expire-{prefix.strip('/')}",
            "Filter": {"Prefix": prefix},
            "Status": "Enabled",
            "Expiration": {"Days": days},
        }
        try:
            await self.client.put_bucket_lifecycle_configuration(
                Bucket=self.bucket, LifecycleConfiguration={"Rules": [rule]}
            )
        except ClientError as error:
            log.warning("bucket lifecycle rule not accepted", error=_code(error))
            return False
        return True

    async def put(self, key: str, body: bytes, content_type: str) -> None:
        await self.client.put_object(
            Bucket=self.bucket, Key=key, Body=body, ContentType=content_type
        )

    async def put_file(self, key: str, path: Path, content_type: str) -> None:
        await self.client.upload_file(
            str(path), self.bucket, key, ExtraArgs={"ContentType": content_type}
        )

    async def get(self, key: str) -> bytes:
        response = await self.client.get_object(Bucket=self.bucket, Key=key)
        async with response["Body"] as stream:
            body: bytes = await stream.read()
        return body

    async def get_head(self, key: str, length: int) -> bytes:
        """The first `length` bytes of an object (fewer when it is shorter)."""
        return await self.get_range(key, 0, length)

    async def get_range(self, key: str, offset: int, length: int) -> bytes:
        """`length` bytes of an object from `offset` (fewer at its end); `length` >= 1."""
        response = await self.client.get_object(
            Bucket=self.bucket, Key=key, Range=f"bytes={offset}-{offset + length - 1}"
        )
        async with response["Body"] as stream:
            body: bytes = await stream.read()
        return body[:length]

    async def download(self, key: str, path: Path) -> None:
        await self.client.download_file(self.bucket, key, str(path))

    async def head(self, key: str) -> ObjectInfo | None:
        """Size and type of an object, or None when it does not exist."""
        try:
            response = await self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if _code(error) in _MISSING:
                return None
            raise
        return ObjectInfo(int(response["ContentLength"]), str(response.get("ContentType", "")))

    async def delete(self, *keys: str) -> None:
        """Deletes objects; a missing one is not an error."""
        for start in range(0, len(keys), 1000):
            batch = [{"Key": key} for key in keys[start : start + 1000]]
            if batch:
                await self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )

    async def presign_put(self, key: str, content_type: str, length: int, seconds: int) -> str:
        """A PUT URL whose SigV4 signature covers Content-Type and Content-Length."""
        url: str = await self.client.generate_presigned_url(
            "put_object",
            Params={
                "Bucket": self.bucket,
                "Key": key,
                "ContentType": content_type,
                "ContentLength": length,
            },
            ExpiresIn=seconds,
        )
        return url

    async def presign_get(self, key: str, seconds: int) -> str:
        """A GET URL valid for `seconds`."""
        url: str = await self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=seconds
        )
        return url
