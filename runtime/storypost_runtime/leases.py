"""Keeping a lease on a record while the work that claimed it runs.

A worker claims a record with a short lease (so a replica killed mid-work holds it for one
short lease, not for the whole work) and renews it while it works. What a renewal writes is
the caller's (a post's holder, a rendering's token); when to renew, what a failed renewal
means and when to stop are the same everywhere, and are written here once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

from storypost_runtime.tasks import background

# A lease is renewed three times per its length: one failed renewal (the database away for
# a moment) still leaves two more turns before the lease runs out.
TURNS_PER_LEASE = 3


async def keep_renewed(
    renew: Callable[[], Awaitable[bool]],
    failed: Callable[[Exception], None],
    *,
    lease: timedelta,
) -> None:
    """Calls `renew` every third of the lease until it answers False (the lease is no longer
    held: taken over, or the work ended). A renewal that raises is reported to `failed` and
    tried again at the next turn; if the lease runs out anyway, the work's own guarded writes
    find the record held by another attempt."""
    every = lease.total_seconds() / TURNS_PER_LEASE
    while True:
        await asyncio.sleep(every)
        try:
            if not await renew():
                return
        except Exception as error:
            failed(error)


@asynccontextmanager
async def renewing(
    renew: Callable[[], Awaitable[bool]],
    failed: Callable[[Exception], None],
    *,
    lease: timedelta,
    name: str,
) -> AsyncIterator[None]:
    """Keeps the lease renewed (`keep_renewed`) for as long as the block runs."""
    async with background(keep_renewed(renew, failed, lease=lease), name):
        yield
