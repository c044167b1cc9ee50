"""Background media processing: download, wait the processing time, then a final state."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from sandbox_net.media import MediaInfo, fetch_media
from sandbox_net.state import Store

Finish = Callable[[MediaInfo], None]


class Processor:
    """Runs each job on a worker thread; `finish` is called under the store lock."""

    def __init__(self, store: Store, workers: int = 8) -> None:
        self._store = store
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="media")

    def submit(self, url: str, *, video: bool, finish: Finish) -> None:
        self._pool.submit(self._run, url, video, finish)

    def _run(self, url: str, video: bool, finish: Finish) -> None:
        config = self._store.config
        started = time.monotonic()
        info = fetch_media(url, video=video) if config.fetch_media else MediaInfo(url)
        wait = config.video_processing_seconds if video else config.image_processing_seconds
        remaining = wait - (time.monotonic() - started)
        if remaining > 0 and info.error is None:
            time.sleep(remaining)
        with self._store.lock:
            finish(info)
            self._store.touch()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
