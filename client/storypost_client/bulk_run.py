"""Running a bulk plan (`storypost_client.bulk_plan`): the planned requests sent through a
client passed in, with a concurrency limit, 429s waited out as the answer asks (the client's
`RetryPolicy`), each sent row's preview polled, and each finished row reported to a progress
callback. The asyncio runner and the thread runner are the blocking and awaited twins.

The runners take any object with the clients' `call`, `retry` and `poll` (`SyncCaller`,
`AsyncCaller`): this module never imports the clients, which import it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypedDict

from storypost_client.bulk_plan import (
    PROCEDURES,
    BadRowsError,
    BulkItem,
    BulkKind,
    BulkPlan,
    StoryFields,
    plan_stories,
)
from storypost_client.errors import ApiError, RateLimitedError, StorypostError
from storypost_client.generated.procedures import ProcedureName
from storypost_client.polling import KINDS, PollPolicy
from storypost_client.retry import RetryPolicy


class SyncCaller(Protocol):
    """What the thread runner needs of a client (`StorypostClient` is one)."""

    retry: RetryPolicy
    poll: PollPolicy

    def call(
        self, procedure: str, body: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...


class AsyncCaller(Protocol):
    """What the asyncio runner needs of a client (`AsyncStorypostClient` is one)."""

    retry: RetryPolicy
    poll: PollPolicy

    async def call(
        self, procedure: str, body: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]: ...


DEFAULT_CONCURRENCY = 4
# How long a run waits for each row's previewUrl (rendering usually takes under a minute).
DEFAULT_PREVIEW_TIMEOUT = 120.0

# What happened to a row in this run.
SCHEDULED = "scheduled"  # a story: the API accepted it now
CREATED = "created"  # a draft: the API accepted it now
ALREADY_SCHEDULED = "already-scheduled"  # the earlier results say it was sent: not sent again
ALREADY_CREATED = "already-created"
SKIPPED = "skipped"  # a bad row, left out (skip_bad_rows)
FAILED = "failed"  # the API refused it, could not be reached, or the post failed
DONE_STATUSES = frozenset({SCHEDULED, CREATED, ALREADY_SCHEDULED, ALREADY_CREATED})


@dataclass(frozen=True)
class _KindFacts:
    procedure: ProcedureName
    uuid_field: str
    status_procedure: str
    sent: str
    already: str
    final_states: frozenset[str]


def _facts(kind: BulkKind, sent: str, already: str) -> _KindFacts:
    return _KindFacts(
        procedure=PROCEDURES[kind],
        uuid_field=KINDS[kind].uuid_field,
        status_procedure=KINDS[kind].status_procedure,
        sent=sent,
        already=already,
        final_states=KINDS[kind].final_states,
    )


_KIND_FACTS: Mapping[BulkKind, _KindFacts] = {
    "story": _facts("story", SCHEDULED, ALREADY_SCHEDULED),
    "draft": _facts("draft", CREATED, ALREADY_CREATED),
}


def _facts_of(plan: BulkPlan) -> _KindFacts:
    return _KIND_FACTS[plan.kind]


# Results.


@dataclass(frozen=True, kw_only=True)
class RowResult:
    """What became of one row; `status` is one of the constants above (`scheduled` …)."""

    row: int
    status: str
    uuid: str | None = None
    date: str | None = None
    preview_url: str | None = None
    editor_url: str | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in DONE_STATUSES


@dataclass(frozen=True)
class BulkReport:
    kind: BulkKind
    results: tuple[RowResult, ...]

    @property
    def ok(self) -> bool:
        """Every row was sent (now or by an earlier run) and none failed."""
        return all(result.ok for result in self.results)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
        return counts


# progress(result, done, total): called once per row as it finishes (skipped rows and rows
# an earlier run sent first), on the caller's thread (the event loop's, for the async client).
BulkProgress = Callable[[RowResult, int, int], None]


def _sent(plan: BulkPlan, item: BulkItem, answer: Mapping[str, Any]) -> RowResult:
    warnings = answer.get("warnings")
    return RowResult(
        row=item.row,
        status=_facts_of(plan).sent,
        uuid=item.uuid,
        # A row sent to a queue learns its date (the slot it took) from the answer.
        date=answer.get("date") or item.date,
        editor_url=answer.get("editorUrl"),
        warnings=tuple(warnings) if isinstance(warnings, list) else (),
    )


def _failed(item: BulkItem, error: StorypostError) -> RowResult:
    message = error.error_message if isinstance(error, ApiError) else str(error)
    status = f" (HTTP {error.status})" if isinstance(error, ApiError) else ""
    return RowResult(
        row=item.row, status=FAILED, uuid=item.uuid, date=item.date, error=message + status
    )


def _with_status(plan: BulkPlan, result: RowResult, answer: Mapping[str, Any]) -> RowResult:
    """The result with what a status answer tells: previewUrl, and a post that failed."""
    preview = answer.get("previewUrl") or result.preview_url
    editor = answer.get("editorUrl") or result.editor_url
    if answer.get("status") == "failed":
        error = answer.get("errorMessage") or f"the {plan.kind} failed"
        return replace(result, status=FAILED, preview_url=preview, editor_url=editor, error=error)
    return replace(result, preview_url=preview, editor_url=editor)


def _preview_known(plan: BulkPlan, answer: Mapping[str, Any]) -> bool:
    return bool(answer.get("previewUrl")) or answer.get("status") in _facts_of(plan).final_states


class _Sending:
    """One row's sending without its calls and pauses (which the runners make, blocking or
    awaited): the row's result once known. After a 429 the client's retries did not get
    through, every worker pauses (`hold`) and the row is sent again."""

    def __init__(
        self, plan: BulkPlan, item: BulkItem, retry: RetryPolicy, hold: Callable[[float], None]
    ) -> None:
        self.procedure = _facts_of(plan).procedure
        self.result: RowResult | None = None
        self._plan = plan
        self._item = item
        self._retry = retry
        self._hold = hold
        self._rounds = 0

    def sent(self, answer: Mapping[str, Any]) -> None:
        self.result = _sent(self._plan, self._item, answer)

    def refused(self, error: StorypostError) -> None:
        wait = _rate_limit_wait(self._retry, error, self._rounds)
        if wait is None:
            self.result = _failed(self._item, error)
            return
        self._hold(wait)
        self._rounds += 1


class _Previewing:
    """One sent row's preview polling without its calls and sleeps (which the runners make,
    blocking or awaited): what to poll, and after each answer how long to sleep."""

    def __init__(self, plan: BulkPlan, result: RowResult, poll: PollPolicy, seconds: float) -> None:
        self.procedure = _facts_of(plan).status_procedure
        self.body = {_facts_of(plan).uuid_field: result.uuid}
        # The row's result as the latest status answer tells it.
        self.result = result
        self._plan = plan
        self._deadline = time.monotonic() + seconds
        self._intervals = poll.intervals()

    def pause(self, answer: Mapping[str, Any]) -> float | None:
        """Takes in a status answer; None when the preview is known, the row is final or the
        time is up, else the seconds to sleep before the next poll."""
        self.result = _with_status(self._plan, self.result, answer)
        left = self._deadline - time.monotonic()
        if _preview_known(self._plan, answer) or left <= 0:
            return None
        return min(next(self._intervals), left)


@dataclass(frozen=True)
class RunOptions:
    """How a runner sends a plan: the bulk methods' arguments of the same names."""

    skip_bad_rows: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    progress: BulkProgress | None = None
    previous: Iterable[RowResult] = ()
    preview: bool = True
    preview_timeout: float = DEFAULT_PREVIEW_TIMEOUT


class RunFields(TypedDict, total=False):
    """`RunOptions` as the bulk methods' keyword arguments (left out: RunOptions' default)."""

    skip_bad_rows: bool
    concurrency: int
    progress: BulkProgress | None
    previous: Iterable[RowResult]
    preview: bool
    preview_timeout: float


class StoryRunFields(StoryFields, RunFields, total=False):
    """`bulk_schedule_stories`' keyword arguments besides `photoapp_username`."""


def story_run(
    template: str,
    rows: Iterable[Mapping[str, Any]],
    photoapp_username: str,
    options: StoryRunFields,
) -> tuple[BulkPlan, RunOptions]:
    """`bulk_schedule_stories`' plan (`plan_stories`), and how to send it."""
    given: Mapping[str, Any] = options
    run = {key: value for key, value in given.items() if key in RunFields.__optional_keys__}
    story = {key: value for key, value in given.items() if key not in run}
    return plan_stories(template, rows, photoapp_username, **story), RunOptions(**run)


def _start(plan: BulkPlan, options: RunOptions) -> tuple[list[RowResult], list[BulkItem]]:
    """Results known before sending (skipped rows, rows an earlier run sent), reported to
    `progress` at once, and what to send."""
    done = {result.uuid: result for result in options.previous if result.ok and result.uuid}
    known = [
        RowResult(row=problem.row, status=SKIPPED, error="; ".join(problem.messages))
        for problem in plan.problems
    ]
    to_send: list[BulkItem] = []
    for item in plan.items:
        earlier = done.get(item.uuid)
        if earlier is None:
            to_send.append(item)
            continue
        known.append(
            RowResult(
                row=item.row,
                status=_facts_of(plan).already,
                uuid=item.uuid,
                date=item.date,
                preview_url=earlier.preview_url,
                editor_url=earlier.editor_url,
                warnings=earlier.warnings,
            )
        )
    known.sort(key=lambda result: result.row)
    results: list[RowResult] = []
    for result in known:
        _finished(plan, options, results, result)
    return results, to_send


def _finished(
    plan: BulkPlan, options: RunOptions, results: list[RowResult], result: RowResult
) -> None:
    """Adds a finished row to `results` and reports it to `progress`."""
    results.append(result)
    if options.progress:
        options.progress(result, len(results), plan.total)


def _rate_limit_wait(retry: RetryPolicy, error: StorypostError, rounds: int) -> float | None:
    """How long every worker pauses after a 429 the client's retries did not get through;
    None when the row fails (not a 429, too many rounds, or a Retry-After too long to wait:
    a quota, not a rate)."""
    if not isinstance(error, RateLimitedError) or rounds >= retry.max_attempts:
        return None
    return retry.delay(rounds + 1, error.retry_after)


def _finish(plan: BulkPlan, results: list[RowResult]) -> BulkReport:
    return BulkReport(plan.kind, tuple(sorted(results, key=lambda result: result.row)))


def check_plan(plan: BulkPlan, *, skip_bad_rows: bool, concurrency: int) -> None:
    """Raises BadRowsError when rows are bad and they are not to be skipped."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if plan.total == 0:
        raise ValueError("the data has no rows")
    if plan.problems and not skip_bad_rows:
        raise BadRowsError(plan.problems, plan.total)


def check_account(answer: Mapping[str, Any], username: str) -> None:
    """Raises ValueError unless `list-photoapp-users` lists the account (before sending, so a
    misspelt account is one error, not one per row)."""
    names = [user.get("photoappUsername") for user in answer.get("photoappUsers", [])]
    if username not in names:
        listed = ", ".join(str(name) for name in names) or "none"
        raise ValueError(f"photoapp account {username!r} is not connected (connected: {listed})")


# The asyncio runner.


@dataclass
class _AsyncPause:
    until: float = 0.0

    async def wait(self) -> None:
        # Another 429 may lengthen the pause while this one sleeps: look again after it.
        while (left := self.until - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)

    def hold(self, seconds: float) -> None:
        self.until = max(self.until, time.monotonic() + seconds)


async def run_async(
    client: AsyncCaller, plan: BulkPlan, options: RunOptions, *, account: str | None = None
) -> BulkReport:
    """Sends a plan's rows, at most `concurrency` at a time; see `bulk_schedule_stories`. With
    `account` (stories), checks first that the photoapp account is connected."""
    check_plan(plan, skip_bad_rows=options.skip_bad_rows, concurrency=options.concurrency)
    if account is not None and plan.items:
        check_account(await client.call("list-photoapp-users", {}), account)
    results, to_send = _start(plan, options)
    pause = _AsyncPause()
    gate = asyncio.Semaphore(options.concurrency)

    async def one(item: BulkItem) -> RowResult:
        async with gate:
            result = await _send_async(client, plan, item, pause)
            if options.preview and result.ok:
                result = await _preview_async(client, plan, result, options.preview_timeout)
            return result

    tasks = [asyncio.ensure_future(one(item)) for item in to_send]
    try:
        for finished in asyncio.as_completed(tasks):
            _finished(plan, options, results, await finished)
    finally:
        # A failure that is not an API error (or a cancel) stops the rows still in flight.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return _finish(plan, results)


async def _send_async(
    client: AsyncCaller, plan: BulkPlan, item: BulkItem, pause: _AsyncPause
) -> RowResult:
    sending = _Sending(plan, item, client.retry, pause.hold)
    while sending.result is None:
        await pause.wait()
        try:
            sending.sent(await client.call(sending.procedure, item.body))
        except StorypostError as error:
            sending.refused(error)
    return sending.result


async def _preview_async(
    client: AsyncCaller, plan: BulkPlan, result: RowResult, seconds: float
) -> RowResult:
    previewing = _Previewing(plan, result, client.poll, seconds)
    while True:
        try:
            answer = await client.call(previewing.procedure, previewing.body)
        except StorypostError:
            return previewing.result  # the row was sent; its preview is only not known
        pause = previewing.pause(answer)
        if pause is None:
            return previewing.result
        await asyncio.sleep(pause)


# The thread runner (the sync client: httpx.Client is safe to share between threads).


@dataclass
class _ThreadPause:
    until: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self) -> None:
        while (left := self.until - time.monotonic()) > 0:
            time.sleep(left)

    def hold(self, seconds: float) -> None:
        with self.lock:
            self.until = max(self.until, time.monotonic() + seconds)


def run_sync(
    client: SyncCaller, plan: BulkPlan, options: RunOptions, *, account: str | None = None
) -> BulkReport:
    """Sends a plan's rows from `concurrency` threads; progress is called on this thread. With
    `account` (stories), checks first that the photoapp account is connected."""
    check_plan(plan, skip_bad_rows=options.skip_bad_rows, concurrency=options.concurrency)
    if account is not None and plan.items:
        check_account(client.call("list-photoapp-users", {}), account)
    results, to_send = _start(plan, options)
    pause = _ThreadPause()

    def one(item: BulkItem) -> RowResult:
        result = _send_sync(client, plan, item, pause)
        if options.preview and result.ok:
            result = _preview_sync(client, plan, result, options.preview_timeout)
        return result

    if not to_send:
        return _finish(plan, results)
    with ThreadPoolExecutor(max_workers=options.concurrency, thread_name_prefix="bulk") as pool:
        futures = [pool.submit(one, item) for item in to_send]
        try:
            for finished in as_completed(futures):
                _finished(plan, options, results, finished.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return _finish(plan, results)


def _send_sync(
    client: SyncCaller, plan: BulkPlan, item: BulkItem, pause: _ThreadPause
) -> RowResult:
    sending = _Sending(plan, item, client.retry, pause.hold)
    while sending.result is None:
        pause.wait()
        try:
            sending.sent(client.call(sending.procedure, item.body))
        except StorypostError as error:
            sending.refused(error)
    return sending.result


def _preview_sync(
    client: SyncCaller, plan: BulkPlan, result: RowResult, seconds: float
) -> RowResult:
    previewing = _Previewing(plan, result, client.poll, seconds)
    while True:
        try:
            answer = client.call(previewing.procedure, previewing.body)
        except StorypostError:
            return previewing.result  # the row was sent; its preview is only not known
        pause = previewing.pause(answer)
        if pause is None:
            return previewing.result
        time.sleep(pause)
