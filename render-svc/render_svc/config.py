"""render-svc settings (STORYPOST_* environment variables)."""

from __future__ import annotations

from pydantic import Field

from storypost_runtime.settings import (
    GrpcServerSettings,
    MongoSettings,
    PublicUrlSettings,
    S3Settings,
    ServiceAddresses,
)

MIB = 1024 * 1024


class RenderSettings(
    GrpcServerSettings, PublicUrlSettings, MongoSettings, S3Settings, ServiceAddresses
):
    grpc_port: int = Field(default=50052, ge=0, le=65535)
    # public_url (PublicUrlSettings): stable temp blob URLs in pages start with it, and
    # render-svc fetches those from S3 directly instead of over HTTP.

    # --- the browser pool ---
    # Debian's headless shell (package chromium-headless-shell), here and in the image: the
    # full browser's window and UI layers cost a render ~20% more CPU (docs/render.md
    # "Which Chromium").
    chromium_path: str = "/usr/lib/chromium/chromium-headless-shell"
    # Browser processes kept warm; each serves many renders, each in a clean page (a new
    # context, or a wiped one whose documents had no origin: docs/render.md "Reuse").
    render_browsers: int = Field(default=1, ge=1, le=16)
    # Renders running at once over all browsers (each is one renderer process).
    render_concurrency: int = Field(default=4, ge=1, le=64)
    # Contexts (with their page) each browser prepares ahead of time, so a render does not
    # wait for a renderer process to start.
    render_spare_pages: int = Field(default=1, ge=0, le=8)
    # Spares draw and capture a sample design of ours before a render gets them
    # (browser/warmup.py): a render then starts on a warmed-up renderer process.
    render_warm_spares: bool = True
    # A browser is replaced after this many renders (bounds leaks in a long-lived process).
    render_browser_max_renders: int = Field(default=200, ge=1, le=100_000)
    # A page (its renderer process) serves up to this many `html` renders, wiped between them
    # (browser/pool.py, docs/render.md "Reuse"); 1: a fresh context for every render.
    render_page_max_renders: int = Field(default=50, ge=1, le=10_000)
    # How long a render may wait for a free slot before RESOURCE_EXHAUSTED (429).
    render_queue_seconds: float = Field(default=30.0, gt=0, le=600)
    # Renders that may wait for a slot at once; beyond that a render is refused at once (429),
    # so an overloaded render-svc answers quickly instead of tying up the edge's threads.
    render_queue_limit: int = Field(default=16, ge=0, le=10_000)
    # Of the waiting renders, at most this many of one organization (render_svc/fair.py): one
    # organization's burst is refused (429) before it fills the queue of every other.
    render_org_queue_limit: int = Field(default=4, ge=0, le=10_000)
    # Nice value of the browsers (0-19; 0: the service's own priority). Renders take what CPU
    # the calls beside them leave, so a burst of renders does not slow every other call.
    render_browser_nice: int = Field(default=10, ge=0, le=19)
    # A page must load and settle (no request in flight, fonts ready) within this time.
    render_settle_seconds: float = Field(default=15.0, gt=0, le=300)
    # V8 heap limit of each page, in MiB; a page over it crashes and the render fails (400).
    render_js_heap_mib: int = Field(default=512, ge=64, le=8192)
    # Resident memory of one renderer process, in MiB (0: no limit). The heap limit does not
    # count typed arrays, images or the DOM; a renderer over this is killed and its render
    # fails as a crashed tab (400). browser/memory.py.
    render_renderer_memory_mib: int = Field(default=2048, ge=0, le=1_048_576)
    # Largest single response a page may load, and all responses of one render together.
    render_max_resource_bytes: int = Field(default=32 * MIB, ge=1024)
    render_max_page_bytes: int = Field(default=128 * MIB, ge=1024)
    # `host:port` pairs (comma-separated) exempt from the private-address rules. Empty in
    # production; tests use it to serve pages from 127.0.0.1.
    render_allowed_hosts: str = ""
    # Immutable temp blobs fetched for pages are kept in memory up to this size in total.
    render_blob_cache_bytes: int = Field(default=64 * MIB, ge=0)

    # --- videos ---
    ffmpeg_path: str = "ffmpeg"
    ffprobe_path: str = "ffprobe"
    # Largest video source fetched from a URL (600 s at 30 Mbps is 2.25 GB).
    render_max_video_bytes: int = Field(default=2560 * MIB, ge=1024)
    # Prepared video sources kept on local disk for their composite; past this many, a new
    # one is dropped after Prepare and its composite fetches the source again. Bounds /tmp
    # (deploy/: sized from these limits) whatever the number of renderings waiting to finish.
    render_kept_video_sources: int = Field(default=2, ge=0, le=1000)
    # A video source must be fetched within this time.
    render_video_fetch_seconds: float = Field(default=120.0, gt=0, le=3600)
    # x264 settings of the composite; the result stays under the 30 Mbps rule.
    video_preset: str = "veryfast"
    video_crf: int = Field(default=20, ge=0, le=51)
    video_max_bitrate: str = "25M"
    # Local files between Prepare and Finish (a temporary directory when empty).
    render_work_dir: str = ""

    # --- renderings ---
    # Lifetime of the presigned media and preview URLs GetRendering and drafts hand out.
    render_media_url_seconds: int = Field(default=3600, ge=60, le=7 * 24 * 3600)
    # A finisher holds a rendering this long, renewed every third of it while it works; a
    # finisher that died loses it after this and another replica takes the rendering over.
    render_finish_lease_seconds: float = Field(default=30.0, ge=5, le=86400)
    # How often expired finishing leases are looked for.
    render_resume_interval_seconds: float = Field(default=15.0, gt=0, le=3600)

    # --- temp blobs ---
    temp_blob_upload_seconds: int = Field(default=900, ge=1, le=7 * 24 * 3600)
    temp_blob_download_seconds: int = Field(default=300, ge=1, le=7 * 24 * 3600)
    # Blobs (record and object) are deleted this long after they were created.
    temp_blob_ttl_seconds: float = Field(default=86400.0, ge=1)
    temp_blob_sweep_interval_seconds: float = Field(default=300.0, gt=0, le=86400)

    # --- drafts ---
    draft_quota: int = Field(default=100, ge=1, le=1_000_000)
    draft_quota_window_seconds: float = Field(default=86400.0, gt=0)

    def allowed_hosts(self) -> frozenset[str]:
        """The `host:port` exemptions, lower-cased."""
        return frozenset(
            item.strip().lower() for item in self.render_allowed_hosts.split(",") if item.strip()
        )
