"""Temp blobs against the real store: presigned PUT rules, the stable URL, inline uploads."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import uuid

import httpx
import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from storypost.testing.stack import StackHandle
from tests.integration.render.conftest import UPLOAD_SECONDS
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration


def png(color: str) -> bytes:
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"color=c={color}:s=64x64", "-frames:v", "1",
         "-f", "image2pipe", "-c:v", "png", "-"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip


async def test_the_presigned_put_takes_exactly_the_declared_upload(api: Api, org: Org) -> None:
    blob_uuid = str(uuid.uuid4())
    body = png("red")
    created = await api.call(
        org,
        "create-temp-blob-upload-url",
        {"tempBlobUuid": blob_uuid, "contentType": "image/png", "contentLengthBytes": len(body)},
    )
    assert created.status_code == 200, created.text
    answer = created.json()
    assert answer["tempBlobUuid"] == blob_uuid
    assert answer["url"].startswith(f"{org.base_url.removesuffix('/api/v1')}/blobs/{blob_uuid}/")
    upload_url = answer["uploadUrl"]
    assert "X-Amz-Expires=900" in upload_url
    # Before the upload the stable URL knows nothing to serve.
    before = await api.get(answer["url"])
    assert before.status_code == 404
    assert "never uploaded" in before.json()["errorMessage"]
    async with httpx.AsyncClient(timeout=30) as client:
        wrong_type = await client.put(
            upload_url, content=body, headers={"Content-Type": "image/jpeg"}
        )
        assert wrong_type.status_code == 403
        longer = await client.put(
            upload_url, content=body + b"x", headers={"Content-Type": "image/png"}
        )
        assert longer.status_code == 403
        shorter = await client.put(
            upload_url, content=body[:-1], headers={"Content-Type": "image/png"}
        )
        assert shorter.status_code == 403
        assert (await api.get(answer["url"])).status_code == 404, "refused PUTs stored nothing"
        good = await client.put(upload_url, content=body, headers={"Content-Type": "image/png"})
        assert good.status_code == 200, good.text
    redirect = await api.get(answer["url"])
    assert redirect.status_code == 302
    assert redirect.headers["Cache-Control"] == "no-store"
    target = redirect.headers["Location"]
    # The edge serves the short-lived download itself (no S3 can add nosniff).
    assert target.startswith(f"{org.base_url.removesuffix('/api/v1')}/blobs/{blob_uuid}/download/")
    assert answer["url"].rsplit("/", 1)[1] not in target, "the download does not show the key"
    async with httpx.AsyncClient(timeout=30) as client:
        fetched = await client.get(target)
        assert fetched.content == body and fetched.headers["Content-Type"] == "image/png"
        assert fetched.headers["X-Content-Type-Options"] == "nosniff"
        assert fetched.headers["Accept-Ranges"] == "bytes"
        # Single byte ranges, as video players ask for them.
        part = await client.get(target, headers={"Range": "bytes=2-5"})
        assert part.status_code == 206 and part.content == body[2:6]
        assert part.headers["Content-Range"] == f"bytes 2-5/{len(body)}"
        assert part.headers["X-Content-Type-Options"] == "nosniff"
        tail = await client.get(target, headers={"Range": "bytes=-3"})
        assert tail.status_code == 206 and tail.content == body[-3:]
        rest = await client.get(target, headers={"Range": f"bytes={len(body) - 2}-"})
        assert rest.status_code == 206 and rest.content == body[-2:]
        beyond = await client.get(target, headers={"Range": f"bytes={len(body)}-"})
        assert beyond.status_code == 416
        assert beyond.headers["Content-Range"] == f"bytes */{len(body)}"
        head = await client.head(target)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["Content-Length"] == str(len(body))
        # A changed signature (or expiry) names no download.
        forged = target[:-1] + ("0" if target[-1] != "0" else "1")
        refused = await client.get(forged)
        assert refused.status_code == 404 and "expired" in refused.json()["errorMessage"]
    again = await api.call(
        org,
        "create-temp-blob-upload-url",
        {"tempBlobUuid": blob_uuid.upper(), "contentType": "video/mp4", "contentLengthBytes": 9},
    )
    assert again.json() == {"tempBlobUuid": blob_uuid, "url": answer["url"]}


async def test_a_late_put_is_refused(render: render_pb2_grpc.RenderServiceAsyncStub) -> None:
    blob = await render.CreateTempBlobUploadUrl(
        pb.CreateTempBlobUploadUrlRequest(
            organization_id="render-tests-org",
            temp_blob_uuid=str(uuid.uuid4()),
            content_type="audio/mpeg",
            content_length_bytes=5,
            public_app_url="http://127.0.0.1:1/o/render-tests-org",
        )
    )
    await asyncio.sleep(UPLOAD_SECONDS + 1.5)
    async with httpx.AsyncClient(timeout=30) as client:
        late = await client.put(
            blob.upload_url, content=b"12345", headers={"Content-Type": "audio/mpeg"}
        )
    assert late.status_code == 403
    assert "expired" in late.text


async def test_stable_urls_of_unknown_blobs_and_wrong_keys_are_404(api: Api, org: Org) -> None:
    body = base64.b64encode(b"GIF89a").decode()
    blob_uuid = str(uuid.uuid4())
    made = await api.call(
        org,
        "upload-temp-blob",
        {"tempBlobUuid": blob_uuid, "contentBase64": body, "contentType": "image/gif"},
    )
    url = made.json()["url"]
    base, key = url.rsplit("/", 1)
    for wrong in (f"{base}/{key[:-2]}xx", url.replace(blob_uuid, str(uuid.uuid4())), base):
        response = await api.get(wrong)
        assert response.status_code == 404
        assert "errorMessage" in response.json()
    other_org = url.replace(org.organization_id, "0" * 24)
    assert (await api.get(other_org)).status_code == 404


async def test_inline_uploads_validate_base64_and_keep_the_first_content(
    api: Api, org: Org
) -> None:
    blob_uuid = str(uuid.uuid4())
    invalid = await api.call(
        org,
        "upload-temp-blob",
        {"tempBlobUuid": blob_uuid, "contentBase64": "not base64!", "contentType": "image/png"},
    )
    assert invalid.status_code == 400
    assert invalid.json()["errorMessage"] == "invalid params for procedure: upload-temp-blob"
    assert "contentBase64" in invalid.json()["validationErrorExplanation"]
    wrong_type = await api.call(
        org,
        "upload-temp-blob",
        {"tempBlobUuid": blob_uuid, "contentBase64": "aGk=", "contentType": "text/plain"},
    )
    assert wrong_type.status_code == 400
    first = png("blue")
    made = await api.call(
        org,
        "upload-temp-blob",
        {
            "tempBlobUuid": blob_uuid,
            "contentBase64": base64.b64encode(first).decode(),
            "contentType": "image/png",
        },
    )
    assert made.status_code == 200, made.text
    assert set(made.json()) == {"tempBlobUuid", "url"}
    repeat = await api.call(
        org,
        "upload-temp-blob",
        {
            "tempBlobUuid": blob_uuid,
            "contentBase64": base64.b64encode(b"other").decode(),
            "contentType": "image/jpeg",
        },
    )
    assert repeat.json() == made.json()
    redirect = await api.get(made.json()["url"])
    async with httpx.AsyncClient(timeout=30) as client:
        assert (await client.get(redirect.headers["Location"])).content == first


async def test_the_bucket_asks_the_store_to_expire_temp_blobs(storypost_stack: StackHandle) -> None:
    """A safety net next to the sweeper (which the unit tests cover): SeaweedFS keeps the rule."""
    import aioboto3

    env = storypost_stack.env
    session = aioboto3.Session(
        aws_access_key_id=env["STORYPOST_S3_ACCESS_KEY"],
        aws_secret_access_key=env["STORYPOST_S3_SECRET_KEY"],
        region_name=env["STORYPOST_S3_REGION"],
    )
    async with session.client("s3", endpoint_url=env["STORYPOST_S3_ENDPOINT_URL"]) as s3:
        rules = await s3.get_bucket_lifecycle_configuration(Bucket=env["STORYPOST_S3_BUCKET"])
    assert any(
        rule["Filter"]["Prefix"] == "temp-blobs/" and rule["Expiration"]["Days"] == 2
        for rule in rules["Rules"]
    )
