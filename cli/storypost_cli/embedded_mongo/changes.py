"""Change streams: committed changes handed to the hub in batches off the event loop, and none
recorded while nobody watches."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from storypost_cli.embedded_mongo.patching import replace_once


def coalesce_change_dispatch(delay_seconds: float = 0.1) -> None:
    """Hands committed changes to mongoeco's change hub in batches, off the event loop.

    mongoeco 4.11 dispatches its change outbox on the server's event loop after each write:
    it takes a lease row in SQLite, starts a heartbeat thread, delivers each change with a
    SQLite commit of its checkpoint, and joins the thread (measured with py-spy under
    bench/load.py: about a third of the event loop's time, and that loop serves every
    connection, so every request waited for it). Storypost opens no change streams (its
    events go through NATS), and one dispatch delivers every change committed since the
    last, so here a write only asks for a dispatch: one runs `delay_seconds` later on a
    thread of its own, for all writes asked meanwhile. What the hub receives, and in which
    order, is unchanged (the hub and the outbox take their own locks); it arrives later by
    at most that delay. Writes inside a transaction keep the original path (it skips them
    until the commit, whose dispatch is deferred likewise).

    On the event loop a dispatch could never overlap the engine's disconnect; on a thread
    it can, and mongoeco's disconnect closes the SQLite connections a dispatch may be using
    (seen: a segmentation fault in `release_consumer_lease`). So a dispatch and a
    disconnect exclude each other, and a dispatch due after the engine closed is dropped:
    nobody can receive it, and the changes stay in the engine's outbox for the next one.
    """
    from mongoeco.api._async._collection_runtime import CollectionRuntimeCoordinator
    from mongoeco.core.operation_context import ChangePublicationPolicy
    from mongoeco.engines.sqlite import SQLiteEngine

    disabled = ChangePublicationPolicy.DISABLED
    # Taken by every deferred dispatch and by every disconnect, in that order of locks
    # (gate first, then the engine's own), so neither can wait on the other while holding one.
    gate = threading.Lock()

    def exclusive_disconnect(original: Any) -> Callable[..., None]:
        def disconnect_sync(self: Any) -> None:
            with gate:
                original(self)

        return disconnect_sync

    replace_once(SQLiteEngine, "_disconnect_sync", exclusive_disconnect)

    def wrap(original: Any) -> Callable[..., None]:
        # One thread: dispatches of a hub stay serial, as on the event loop.
        dispatcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="storypost-changes")
        asked: set[tuple[int, int]] = set()

        def dispatch(self: Any, operation_context: Any = None) -> None:
            if getattr(operation_context, "publication", None) is disabled:
                return  # the write recorded no change: nothing to deliver
            session = getattr(operation_context, "session", None)
            if session is not None and session.in_transaction:
                original(self, operation_context)
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop to defer to: dispatch now, as mongoeco does
                original(self, operation_context)
                return
            key = (id(self._engine_spi), id(self._collection._change_hub))
            if key in asked:
                return
            asked.add(key)

            def run() -> None:
                # Forgotten first: a write committed during this dispatch asks for the next.
                asked.discard(key)
                with gate:
                    engine = self._engine_spi.engine
                    if isinstance(engine, SQLiteEngine) and engine._connection is None:
                        return  # closed since the write: see the docstring
                    original(self, None)

            loop.call_later(delay_seconds, dispatcher.submit, run)

        return dispatch

    replace_once(CollectionRuntimeCoordinator, "_dispatch_engine_changes", wrap)


def record_no_changes_while_nobody_watches() -> None:
    """Writes made while no change stream is open record nothing in mongoeco's change outbox.

    mongoeco 4.11 records every write in its change outbox, inside the write's transaction,
    also while nobody watches: the change is serialized and fingerprinted, an outbox row and
    an identity row are inserted, the outbox is compacted (six more statements), and a
    later dispatch checkpoints each row with a commit of its own on a second connection,
    which waits for SQLite's one write lock like the engine's writes do (under
    bench/load.py: a fifth of all the SQL the stand-in ran). Such a row is a gap marker: it
    lets a stream resumed later refuse a resume token older than changes it cannot replay.
    Storypost opens no change stream (its events go through NATS). So a write that
    mongoeco would record as a gap (it chooses that only while its hub has no watcher and no
    journal) records nothing, and its dispatch is not asked for; writes in a transaction, or
    while a stream is open, are recorded exactly as before. What a gap guarded stays
    guarded: once a write went unrecorded, the hub refuses every resume token (and start
    time) issued before the next stream opened, with mongoeco's own error.
    """
    from mongoeco._change_streams.hub import ChangeStreamHub
    from mongoeco.api._async.collection import AsyncCollection
    from mongoeco.core.operation_context import ChangePublicationPolicy
    from mongoeco.errors import OperationFailure

    def silence(hub: Any) -> dict[str, Any]:
        # Per hub: whether a write went unrecorded, and the token below which resume tokens
        # are refused (set when the next stream opens).
        state: dict[str, Any] = hub.__dict__.setdefault(
            "_storypost_silence", {"silenced": False, "floor": None}
        )
        return state

    def wrap_context(original: Any) -> Callable[..., Any]:
        def new_operation_context(self: Any, **kwargs: Any) -> Any:
            hub = self._change_hub
            if kwargs.get("publication") is ChangePublicationPolicy.RECORD_GAP and (
                hub is None or not hub.should_publish_events()
            ):
                kwargs["publication"] = ChangePublicationPolicy.DISABLED
                if hub is not None:
                    with hub._condition:
                        silence(hub).update(silenced=True, floor=None)
            return original(self, **kwargs)

        return new_operation_context

    def wrap_register(original: Any) -> Callable[[Any], None]:
        def register_watcher(self: Any) -> None:
            with self._condition:
                state = silence(self)
                if state["silenced"] and state["floor"] is None:
                    # Every token a stream has received so far is below the next one.
                    state["floor"] = self._next_token
            original(self)

        return register_watcher

    def wrap_resume(original: Any) -> Callable[..., int]:
        def offset(self: Any, token: int) -> int:
            with self._condition:
                state = silence(self)
                if state["silenced"] and (state["floor"] is None or token < state["floor"]):
                    raise OperationFailure(
                        "resume token is no longer available in retained change stream history"
                    )
            answer: int = original(self, token)
            return answer

        return offset

    replace_once(AsyncCollection, "_new_operation_context", wrap_context)
    replace_once(ChangeStreamHub, "register_watcher", wrap_register)
    replace_once(ChangeStreamHub, "offset_after_token", wrap_resume)
    replace_once(ChangeStreamHub, "offset_at_or_after_cluster_time", wrap_resume)
