"""Background media processing: download, wait the processing time, then a final state."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field

from sandbox_net.media import MediaInfo, fetch_media
from sandbox_net.state import Store
from storypost_runtime.component import component

Finish = Callable[[MediaInfo], None]


@component
class Processor:
    """Runs each job on a worker thread; `finish` is called under the store lock."""

    store: Store
    workers: int = 8
    _pool: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="media")

    def submit(self, url: str, *, video: bool, finish: Finish) -> None:
        self._pool.submit(self._run, url, video, finish)

    def _run(self, url: str, video: bool, finish: Finish) -> None:
        config = self.store.config
        started = time.monotonic()
        info = fetch_media(url, video=video) if config.fetch_media else MediaInfo(url)
        wait = config.video_processing_seconds if video else config.image_processing_seconds
        remaining = wait - (time.monotonic() - started)
        if remaining > 0 and info.error is None:
            time.sleep(remaining)
        with self.store.lock:
            finish(info)
            self.store.touch()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
