"""`AsyncStorypostClient`: the asyncio client, the same surface as `StorypostClient`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import httpx

from storypost_client import bulk_plan, bulk_run, transport
from storypost_client.bulk_run import BulkReport
from storypost_client.client_base import ClientBase
from storypost_client.generated.async_methods import AsyncMethods
from storypost_client.generated.types import (
    StatusClipappPostResponse,
    StatusDraftResponse,
    StatusPhotoappReelResponse,
    StatusPhotoappStoryResponse,
    StatusSocialPostResponse,
)
from storypost_client.polling import KindName, PollPolicy, StatusHook, Waiting
from storypost_client.uploads import (
    PUT_TIMEOUT,
    Progress,
    StoreUnreachable,
    UploadedFile,
    UploadMethod,
    UploadPlan,
    aread_chunks,
    check_inline_fallback,
    inline_body,
    plan_upload,
    put_retry_wait,
    sent_whole,
)

if TYPE_CHECKING:
    from typing import Self, Unpack  # Python 3.11+: annotations only


class AsyncStorypostClient(ClientBase[httpx.AsyncClient], AsyncMethods):
    """An asyncio client of one organization's API; see `StorypostClient` for the behaviour.

    Use it as an async context manager, or `await client.aclose()`.
    """

    def _new_http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient()

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
        request = self._endpoint.request(procedure, body, timeout)
        attempt = 0
        while True:
            attempt += 1
            slot = self.pacer.reserve()
            answered: httpx.Headers | None = None
            try:
                if slot.wait > 0:
                    await asyncio.sleep(slot.wait)
                response = await self._http.post(
                    request.url,
                    content=request.content,
                    headers=request.headers,
                    timeout=request.timeout,
                )
                answered = response.headers
                return transport.decode_answer(procedure, response, attempt)
            except transport.ATTEMPT_ERRORS as error:
                delay = self._retry_wait(request, attempt, error)
            finally:
                self.pacer.settle(slot, answered)
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
        waiting = Waiting(kind, uuid, poll or self.poll, timeout, on_status)
        while True:
            answer = await self._call(waiting.procedure, waiting.body, None)
            pause = waiting.pause(answer)
            if pause is None:
                return answer
            await asyncio.sleep(pause)

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

    # Bulk stories and drafts from a template and rows of data (bulk_plan, then bulk_run).

    async def bulk_schedule_stories(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        photoapp_username: str,
        **options: Unpack[bulk_run.StoryRunFields],
    ) -> BulkReport:
        """Schedules one story per row, at most `concurrency` asyncio tasks at a time; see
        `StorypostClient.bulk_schedule_stories`."""
        plan, run = bulk_run.story_run(template, rows, photoapp_username, options)
        return await bulk_run.run_async(self, plan, run, account=photoapp_username)

    async def bulk_create_drafts(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        folder_name: str | None = None,
        name: str | None = None,
        **run: Unpack[bulk_run.RunFields],
    ) -> BulkReport:
        """Creates one draft per row; see `StorypostClient.bulk_create_drafts`."""
        plan = bulk_plan.plan_drafts(template, rows, folder_name=folder_name, name=name)
        return await bulk_run.run_async(self, plan, bulk_run.RunOptions(**run))

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
            return sent_whole(plan, created, "existing", progress)
        try:
            await self._put(upload_url, plan, progress)
        except StoreUnreachable as unreachable:
            check_inline_fallback(method, plan, unreachable)
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
        return sent_whole(plan, answer, "inline", progress)

    async def _put(self, upload_url: str, plan: UploadPlan, progress: Progress | None) -> None:
        """PUTs the file to the presigned URL, retrying what the retry policy retries."""
        attempt = 0
        while True:
            attempt += 1
            outcome: httpx.Response | Exception
            try:
                async with contextlib.aclosing(
                    aread_chunks(plan.path, plan.size, progress)
                ) as body:
                    outcome = await self._http.put(
                        upload_url, content=body, headers=plan.put_headers(), timeout=PUT_TIMEOUT
                    )
            except transport.TRANSIENT_TRANSPORT_ERRORS as error:
                outcome = error
            wait = put_retry_wait(self.retry, attempt, outcome)
            if wait is None:
                return
            await asyncio.sleep(wait)
