"""`AsyncStorypostClient`: the asyncio client, the same surface as `StorypostClient`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import httpx

from storypost_client import bulk, transport
from storypost_client.bulk import BulkProgress, BulkReport, RowResult
from storypost_client.errors import StorypostError, UploadError, WaitTimeoutError
from storypost_client.generated.async_methods import AsyncMethods
from storypost_client.generated.types import (
    StatusClipappPostResponse,
    StatusDraftResponse,
    StatusPhotoappReelResponse,
    StatusPhotoappStoryResponse,
    StatusSocialPostResponse,
)
from storypost_client.polling import KindName, PollPolicy, kind_of
from storypost_client.retry import RetryPolicy
from storypost_client.uploads import (
    INLINE_MAX_BYTES,
    PUT_TIMEOUT,
    Progress,
    StoreUnreachable,
    UploadedFile,
    UploadMethod,
    UploadPlan,
    aread_chunks,
    inline_body,
    plan_upload,
)

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+: annotations only

StatusHook = Callable[[Mapping[str, Any]], None]


class AsyncStorypostClient(AsyncMethods):
    """An asyncio client of one organization's API; see `StorypostClient` for the behaviour.

    Use it as an async context manager, or `await client.aclose()`.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        retry: RetryPolicy | None = None,
        poll: PollPolicy | None = None,
        connect_timeout: float = transport.DEFAULT_CONNECT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
        on_retry: transport.RetryHook | None = None,
    ) -> None:
        self._endpoint = transport.Endpoint(base_url, token, connect_timeout)
        self.retry = retry or RetryPolicy()
        self.poll = poll or PollPolicy()
        self._own_http = http_client is None
        self._http = http_client or httpx.AsyncClient()
        self._on_retry = on_retry

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client from STORYPOST_BASE_URL and STORYPOST_API_TOKEN."""
        base_url, token = transport.env_credentials(os.environ)
        return cls(base_url, token, **options)

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def call(
        self, procedure: str, body: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Calls any procedure by name with a JSON object body; returns the answer's object."""
        return await self._call(procedure, dict(body or {}), timeout)

    async def _call(
        self, procedure: str, body: dict[str, Any], timeout: float | None
    ) -> dict[str, Any]:
        info = transport.procedure_info(procedure)
        content = transport.encode_body(body)
        url = self._endpoint.url(procedure)
        headers = self._endpoint.headers()
        limit = self._endpoint.timeout(info, timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.post(
                    url, content=content, headers=headers, timeout=limit
                )
                return transport.decode_answer(procedure, response, attempt)
            except transport.TRANSIENT_TRANSPORT_ERRORS as error:
                failure: StorypostError = transport.connection_error(procedure, error, attempt)
                cause: Exception = error
            except StorypostError as error:
                failure = cause = error
            delay = transport.retry_delay(self.retry, info, attempt, failure)
            if delay is None:
                if failure is cause:
                    raise failure
                raise failure from cause
            if self._on_retry:
                self._on_retry(attempt, delay, failure)
            await asyncio.sleep(delay)

    # Polling helpers: poll the status procedure with backoff until a final state.

    async def wait_for(
        self,
        kind: KindName,
        uuid: str,
        *,
        timeout: float | None = None,
        poll: PollPolicy | None = None,
        on_status: StatusHook | None = None,
    ) -> dict[str, Any]:
        """Polls `kind` (story, reel, clipapp, social, draft) until a final state; returns the
        last status answer. Raises WaitTimeoutError after `timeout` (default `poll.timeout`)."""
        what = kind_of(kind)
        policy = poll or self.poll
        seconds = policy.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        intervals = policy.intervals()
        while True:
            answer = await self._call(what.status_procedure, {what.uuid_field: uuid}, None)
            if on_status:
                on_status(answer)
            if answer.get("status") in what.final_states:
                return answer
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(kind, uuid, answer, seconds)
            await asyncio.sleep(min(next(intervals), remaining))

    async def wait_for_story(
        self, story_post_uuid: str, **options: Any
    ) -> StatusPhotoappStoryResponse:
        """Waits until the story is executed, failed or canceled (see `wait_for`)."""
        answer = await self.wait_for("story", story_post_uuid, **options)
        return cast(StatusPhotoappStoryResponse, answer)

    async def wait_for_reel(
        self, reel_post_uuid: str, **options: Any
    ) -> StatusPhotoappReelResponse:
        """Waits until the reel is executed, failed or canceled (see `wait_for`)."""
        answer = await self.wait_for("reel", reel_post_uuid, **options)
        return cast(StatusPhotoappReelResponse, answer)

    async def wait_for_clipapp_post(
        self, clipapp_post_uuid: str, **options: Any
    ) -> StatusClipappPostResponse:
        """Waits until the clipapp post is executed, failed or canceled (see `wait_for`)."""
        answer = await self.wait_for("clipapp", clipapp_post_uuid, **options)
        return cast(StatusClipappPostResponse, answer)

    async def wait_for_social_post(
        self, social_post_uuid: str, **options: Any
    ) -> StatusSocialPostResponse:
        """Waits until the social post is executed, failed or canceled (see `wait_for`)."""
        answer = await self.wait_for("social", social_post_uuid, **options)
        return cast(StatusSocialPostResponse, answer)

    async def wait_for_draft(self, draft_uuid: str, **options: Any) -> StatusDraftResponse:
        """Waits until the draft is ready, failed or deleted (see `wait_for`)."""
        answer = await self.wait_for("draft", draft_uuid, **options)
        return cast(StatusDraftResponse, answer)

    # Bulk stories and drafts from a template and rows of data (storypost_client.bulk).

    async def bulk_schedule_stories(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        photoapp_username: str,
        at_column: str | None = None,
        start: str | datetime | None = None,
        every: str | timedelta | None = None,
        ai_generated: bool | None = None,
        share_to_linknet: bool | None = None,
        linknet_destination_id: str | int | None = None,
        skip_bad_rows: bool = False,
        concurrency: int = bulk.DEFAULT_CONCURRENCY,
        progress: BulkProgress | None = None,
        previous: Iterable[RowResult] = (),
        preview: bool = True,
        preview_timeout: float = bulk.DEFAULT_PREVIEW_TIMEOUT,
    ) -> BulkReport:
        """Schedules one story per row: `template` with its `{{column}}` placeholders filled
        with the row's values (HTML-escaped), on `photoapp_username`, at the date in the row's
        `at_column`, at `start + n * every` for the n-th row, or at once.

        Every row is checked before anything is sent (BadRowsError lists the bad ones, unless
        `skip_bad_rows`), and the account too (ValueError when it is not connected). Each row's
        UUID is derived from the template, its values, its date and the account, so running the
        same rows again sends the same UUIDs and the API makes nothing twice; rows that
        `previous` results list as done are not sent at all. At most `concurrency` rows are in
        flight; a 429 pauses every row for as long as the answer asks. `progress(result, done,
        total)` is called as each row finishes; with `preview`, each row's status is polled
        until its `previewUrl` is known (at most `preview_timeout` seconds).
        """
        plan = bulk.plan_stories(
            template,
            rows,
            photoapp_username,
            at_column=at_column,
            start=start,
            every=every,
            ai_generated=ai_generated,
            share_to_linknet=share_to_linknet,
            linknet_destination_id=linknet_destination_id,
        )
        options = bulk.RunOptions(
            skip_bad_rows, concurrency, progress, previous, preview, preview_timeout
        )
        return await bulk.run_async(self, plan, options, account=photoapp_username)

    async def bulk_create_drafts(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        folder_name: str | None = None,
        name: str | None = None,
        skip_bad_rows: bool = False,
        concurrency: int = bulk.DEFAULT_CONCURRENCY,
        progress: BulkProgress | None = None,
        previous: Iterable[RowResult] = (),
        preview: bool = True,
        preview_timeout: float = bulk.DEFAULT_PREVIEW_TIMEOUT,
    ) -> BulkReport:
        """Creates one draft per row in the gallery folder `folder_name`; `name` is a plain-text
        template of each draft's name (`"{{title}}"`). Otherwise like
        `bulk_schedule_stories` (the UUID is derived from the template, the values, the folder
        and the name template)."""
        plan = bulk.plan_drafts(template, rows, folder_name=folder_name, name=name)
        options = bulk.RunOptions(
            skip_bad_rows, concurrency, progress, previous, preview, preview_timeout
        )
        return await bulk.run_async(self, plan, options)

    # Temp blob uploads.

    async def upload_file(
        self,
        path: str | Path,
        content_type: str | None = None,
        *,
        progress: Progress | None = None,
        temp_blob_uuid: str | None = None,
        method: UploadMethod = "auto",
    ) -> UploadedFile:
        """Uploads a local file as a temp blob; see `StorypostClient.upload_file`."""
        plan = await asyncio.to_thread(plan_upload, path, content_type, method)
        blob_uuid = temp_blob_uuid or transport.new_uuid()
        if method == "inline":
            return await self._upload_inline(plan, blob_uuid, progress)
        created = await self.create_temp_blob_upload_url(
            temp_blob_uuid=blob_uuid,
            content_type=plan.content_type,
            content_length_bytes=plan.size,
        )
        upload_url = created.get("uploadUrl")
        if upload_url is None:
            # The blob exists already (an earlier call with this UUID): nothing to send.
            if progress:
                progress(plan.size, plan.size)
            return plan.uploaded(created["tempBlobUuid"], created["url"], "existing")
        try:
            await self._put(upload_url, plan, progress)
        except StoreUnreachable as unreachable:
            if method == "presigned" or plan.size > INLINE_MAX_BYTES:
                raise UploadError(f"cannot reach the upload URL: {unreachable}") from unreachable
            # The blob under `blob_uuid` is reserved (and empty): the inline copy needs its own.
            return await self._upload_inline(plan, transport.new_uuid(), progress)
        return plan.uploaded(created["tempBlobUuid"], created["url"], "presigned")

    async def _upload_inline(
        self, plan: UploadPlan, blob_uuid: str, progress: Progress | None
    ) -> UploadedFile:
        if progress:
            progress(0, plan.size)
        body = await asyncio.to_thread(inline_body, plan, blob_uuid)
        answer = await self._call("upload-temp-blob", body, None)
        if progress:
            progress(plan.size, plan.size)
        return plan.uploaded(answer["tempBlobUuid"], answer["url"], "inline")

    async def _put(self, upload_url: str, plan: UploadPlan, progress: Progress | None) -> None:
        """PUTs the file to the presigned URL, retrying what the retry policy retries."""
        attempt = 0
        while True:
            attempt += 1
            try:
                async with contextlib.aclosing(
                    aread_chunks(plan.path, plan.size, progress)
                ) as body:
                    response = await self._http.put(
                        upload_url, content=body, headers=plan.put_headers(), timeout=PUT_TIMEOUT
                    )
            except httpx.ConnectError as error:
                raise StoreUnreachable(repr(error)) from error
            except transport.TRANSIENT_TRANSPORT_ERRORS as error:
                if attempt >= self.retry.max_attempts:
                    raise StoreUnreachable(repr(error)) from error
                await asyncio.sleep(self.retry.delay(attempt) or 0.0)
                continue
            if response.is_success:
                return
            if response.status_code in self.retry.statuses and attempt < self.retry.max_attempts:
                await asyncio.sleep(self.retry.delay(attempt) or 0.0)
                continue
            raise transport.upload_refused(response)
