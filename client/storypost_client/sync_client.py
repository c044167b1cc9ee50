"""`StorypostClient`: the synchronous client (retries, polling helpers, file uploads)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import httpx

from storypost_client import bulk_plan, bulk_run, transport
from storypost_client.bulk_run import BulkReport
from storypost_client.client_base import ClientBase
from storypost_client.generated.sync_methods import SyncMethods
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
    check_inline_fallback,
    inline_body,
    plan_upload,
    put_retry_wait,
    read_chunks,
    sent_whole,
)

if TYPE_CHECKING:
    from typing import Self, Unpack  # Python 3.11+: annotations only


class StorypostClient(ClientBase[httpx.Client], SyncMethods):
    """A synchronous client of one organization's API (`{base_url}` ends in `/api/v1`).

    Every procedure is a typed method (`client.schedule_photoapp_story(...)`); `call()` takes
    any procedure by name. Calls are retried per `retry` (the spec's guidance: 429, 502, 503,
    504 and connection failures, for idempotent procedures, with the same body), and paced from
    the rate-limit headers so that they wait for the bucket instead of meeting a 429 (`pacer`,
    storypost_client.pacing). Use it as a context manager, or call `close()`.
    """

    def _new_http(self) -> httpx.Client:
        return httpx.Client()

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call(
        self, procedure: str, body: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Calls any procedure by name with a JSON object body; returns the answer's object."""
        return self._call(procedure, dict(body or {}), timeout)

    def _call(self, procedure: str, body: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        request = self._endpoint.request(procedure, body, timeout)
        attempt = 0
        while True:
            attempt += 1
            slot = self.pacer.reserve()
            answered: httpx.Headers | None = None
            try:
                if slot.wait > 0:
                    time.sleep(slot.wait)
                response = self._http.post(
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
            time.sleep(delay)

    # Polling helpers: poll the status procedure with backoff until a final state.

    def wait_for(
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
            answer = self._call(waiting.procedure, waiting.body, None)
            pause = waiting.pause(answer)
            if pause is None:
                return answer
            time.sleep(pause)

    def wait_for_story(self, story_post_uuid: str, **options: Any) -> StatusPhotoappStoryResponse:
        """Waits until the story is executed, failed or canceled (see `wait_for`)."""
        return cast(StatusPhotoappStoryResponse, self.wait_for("story", story_post_uuid, **options))

    def wait_for_reel(self, reel_post_uuid: str, **options: Any) -> StatusPhotoappReelResponse:
        """Waits until the reel is executed, failed or canceled (see `wait_for`)."""
        return cast(StatusPhotoappReelResponse, self.wait_for("reel", reel_post_uuid, **options))

    def wait_for_clipapp_post(
        self, clipapp_post_uuid: str, **options: Any
    ) -> StatusClipappPostResponse:
        """Waits until the clipapp post is executed, failed or canceled (see `wait_for`)."""
        answer = self.wait_for("clipapp", clipapp_post_uuid, **options)
        return cast(StatusClipappPostResponse, answer)

    def wait_for_social_post(
        self, social_post_uuid: str, **options: Any
    ) -> StatusSocialPostResponse:
        """Waits until the social post is executed, failed or canceled (see `wait_for`)."""
        answer = self.wait_for("social", social_post_uuid, **options)
        return cast(StatusSocialPostResponse, answer)

    def wait_for_draft(self, draft_uuid: str, **options: Any) -> StatusDraftResponse:
        """Waits until the draft is ready, failed or deleted (see `wait_for`)."""
        return cast(StatusDraftResponse, self.wait_for("draft", draft_uuid, **options))

    # Bulk stories and drafts from a template and rows of data (bulk_plan, then bulk_run).

    def bulk_schedule_stories(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        photoapp_username: str,
        **options: Unpack[bulk_run.StoryRunFields],
    ) -> BulkReport:
        """Schedules one story per row: `template` with its `{{column}}` placeholders filled
        with the row's values (HTML-escaped), on `photoapp_username`, at the date in the row's
        `at_column`, at `start + n * every` for the n-th row, in the next free slot of the queue
        `queue_name` (or of the queue named in the row's `queue_column`), or at once.

        Every row is checked before anything is sent (BadRowsError lists the bad ones, unless
        `skip_bad_rows`), and the account too (ValueError when it is not connected). Each row's
        UUID is derived from the template, its values, its date (or queue) and the account, so
        running the same rows again sends the same UUIDs and the API makes nothing twice; rows that
        `previous` results list as done are not sent at all. At most `concurrency` rows are in
        flight; a 429 pauses every row for as long as the answer asks. `progress(result, done,
        total)` is called as each row finishes; with `preview`, each row's status is polled
        until its `previewUrl` is known (at most `preview_timeout` seconds).

        The keywords besides `photoapp_username` are `bulk_run.StoryRunFields`: the story's
        (`at_column`, `start`, `every`, `queue_name`, `queue_column`, `ai_generated`,
        `share_to_linknet`, `linknet_destination_id`; see `bulk_plan.plan_stories`) and the
        run's (`skip_bad_rows`, `concurrency`, `progress`, `previous`, `preview`,
        `preview_timeout`; their defaults are `bulk_run.RunOptions`').
        """
        plan, run = bulk_run.story_run(template, rows, photoapp_username, options)
        return bulk_run.run_sync(self, plan, run, account=photoapp_username)

    def bulk_create_drafts(
        self,
        template: str,
        rows: Iterable[Mapping[str, Any]],
        *,
        folder_name: str | None = None,
        name: str | None = None,
        **run: Unpack[bulk_run.RunFields],
    ) -> BulkReport:
        """Creates one draft per row in the gallery folder `folder_name`; `name` is a plain-text
        template of each draft's name (`"{{title}}"`). Otherwise like
        `bulk_schedule_stories` (the UUID is derived from the template, the values, the folder
        and the name template)."""
        plan = bulk_plan.plan_drafts(template, rows, folder_name=folder_name, name=name)
        return bulk_run.run_sync(self, plan, bulk_run.RunOptions(**run))

    # Temp blob uploads.

    def upload_file(
        self,
        path: str | Path,
        content_type: str | None = None,
        *,
        progress: Progress | None = None,
        temp_blob_uuid: str | None = None,
        method: UploadMethod = "auto",
    ) -> UploadedFile:
        """Uploads a local file as a temp blob; use the answer's `url` as `src` in pages.

        `auto` (default) asks for a presigned URL (create-temp-blob-upload-url) and PUTs the
        file there, streaming it with exactly the declared Content-Type and Content-Length and
        calling `progress(sent, total)`; when that URL's host cannot be reached it falls back
        to upload-temp-blob (base64 inline, files up to 30 MB) under a new UUID. `presigned`
        and `inline` force one way. The content type is guessed from the file name when not
        given. Raises ValueError for a file the API would refuse (empty, too large, not
        image/video/audio), UploadError when the media store refuses the bytes.
        """
        plan = plan_upload(path, content_type, method)
        blob_uuid = temp_blob_uuid or transport.new_uuid()
        if method == "inline":
            return self._upload_inline(plan, blob_uuid, progress)
        created = self.create_temp_blob_upload_url(
            temp_blob_uuid=blob_uuid,
            content_type=plan.content_type,
            content_length_bytes=plan.size,
        )
        upload_url = created.get("uploadUrl")
        if upload_url is None:
            # The blob exists already (an earlier call with this UUID): nothing to send.
            return sent_whole(plan, created, "existing", progress)
        try:
            self._put(upload_url, plan, progress)
        except StoreUnreachable as unreachable:
            check_inline_fallback(method, plan, unreachable)
            # The blob under `blob_uuid` is reserved (and empty): the inline copy needs its own.
            return self._upload_inline(plan, transport.new_uuid(), progress)
        return plan.uploaded(created["tempBlobUuid"], created["url"], "presigned")

    def _upload_inline(
        self, plan: UploadPlan, blob_uuid: str, progress: Progress | None
    ) -> UploadedFile:
        if progress:
            progress(0, plan.size)
        answer = self._call("upload-temp-blob", inline_body(plan, blob_uuid), None)
        return sent_whole(plan, answer, "inline", progress)

    def _put(self, upload_url: str, plan: UploadPlan, progress: Progress | None) -> None:
        """PUTs the file to the presigned URL, retrying what the retry policy retries."""
        attempt = 0
        while True:
            attempt += 1
            outcome: httpx.Response | Exception
            try:
                with plan.path.open("rb") as file:
                    outcome = self._http.put(
                        upload_url,
                        content=read_chunks(file, plan.size, progress),
                        headers=plan.put_headers(),
                        timeout=PUT_TIMEOUT,
                    )
            except transport.TRANSIENT_TRANSPORT_ERRORS as error:
                outcome = error
            wait = put_retry_wait(self.retry, attempt, outcome)
            if wait is None:
                return
            time.sleep(wait)
