"""Issue #21 item 2: nothing a page leaves behind is seen by a later render.

One page, rendered back to back in one organization and then in another: it first reads
every place a page can leave something (window.name, globals, the top window's globals,
localStorage, sessionStorage, cookies, Cache Storage, IndexedDB, service workers, history
entries, performance entries, the HTTP cache), then leaves something in each and reads
again. It reports both readings to the page server. Every render must find nothing before
it leaves its own; the reading after leaving finds everything, which shows the readers work.
The page's load event waits for its report (an image the page server holds until the report
arrives), so no render is captured and torn down before its page has reported, however
loaded the machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.conftest import RenderInstance
from tests.integration.render.rendering import prepare
from tests.support.pages import PageServer

pytestmark = pytest.mark.integration


def memory_page(base: str) -> str:
    """The page; `base` prefixes its requests ("" for a `url` design, the page server's
    address for an `html` design, which has no address of its own)."""
    return PAGE.replace("BASE", base)


# Every reading and leaving is tried on its own: in a document without an origin (an `html`
# design) the storage APIs throw, which is one of the walls.
PAGE = """<!doctype html><html><head><style>body{margin:0;width:1080px;height:1920px}</style>
</head><body><h1>memory</h1><img src="BASE/hold" alt=""><script>
const attempt = async (step) => { try { return await step(); } catch (e) { return null; } };
async function read() {
  const found = {};
  const note = async (name, value) => {
    const got = await attempt(value);
    if (got) found[name] = String(got);
  };
  await note("window.name", () => window.name);
  await note("global", () => globalThis.leftBehind);
  await note("top", () => top.leftBehind);
  await note("localStorage", () => localStorage.getItem("left"));
  await note("sessionStorage", () => sessionStorage.getItem("left"));
  await note("cookie", () => document.cookie.includes("left=") && document.cookie);
  await note("caches", async () => (await caches.keys()).join(","));
  await note("indexedDB", async () => (await indexedDB.databases()).map((d) => d.name).join(","));
  await note("serviceWorker",
    async () => (await navigator.serviceWorker.getRegistrations()).length);
  found.historyLength = history.length;
  await note("performance", () => performance.getEntriesByName("left").length);
  return found;
}
async function leave() {
  await attempt(() => { window.name = "left"; });
  await attempt(() => { globalThis.leftBehind = "left"; });
  await attempt(() => { top.leftBehind = "left"; });
  await attempt(() => localStorage.setItem("left", "1"));
  await attempt(() => sessionStorage.setItem("left", "1"));
  await attempt(() => { document.cookie = "left=1; max-age=3600"; });
  await attempt(async () => (await caches.open("left")).put("/left", new Response("left")));
  await attempt(() => new Promise((done) => {
    const open = indexedDB.open("left");
    open.onupgradeneeded = () => open.result.createObjectStore("s");
    open.onsuccess = () => { open.result.close(); done(); };
    open.onerror = done;
  }));
  await attempt(() => navigator.serviceWorker.register("/sw.js"));
  await attempt(() => history.pushState({}, "", "#left"));
  await attempt(() => performance.mark("left"));
  await attempt(() => fetch("BASE/cacheable"));
  await attempt(() => new Promise((done) => {
    const image = new Image();
    image.onload = image.onerror = done;
    image.src = "BASE/cacheable?image";
  }));
}
(async () => {
  const before = await read();
  await leave();
  const after = await read();
  after.pushed = history.length > before.historyLength;
  await fetch("BASE/report?" + encodeURIComponent(JSON.stringify({before, after})));
})();
</script></body></html>"""

# What the reading after leaving must find: everything but what only outlives a document
# (service workers are blocked in every context, so none is ever registered).
LEFT_IN_ONE_RENDER = {
    "window.name", "global", "top", "localStorage", "sessionStorage", "cookie", "caches",
    "indexedDB", "performance",
}  # fmt: skip
# In a document without an origin the storage APIs refuse: what is left is the window's. The
# top document (ours, kept between renders) is of another origin: it can neither be written
# nor read.
LEFT_WITHOUT_AN_ORIGIN = {"window.name", "global", "performance"}
ORGANIZATIONS = ["memory-org-a", "memory-org-a", "memory-org-b", "memory-org-a"]


def reports(server: PageServer) -> list[dict[str, dict[str, Any]]]:
    found = []
    for hit in server.hits:
        parts = urlsplit(hit)
        if parts.path == "/report":
            found.append(json.loads(unquote(parts.query)))
    return found


def page_renders(log: Path, since: int) -> list[int]:
    """Each later render's number on its page (render-svc's "rendered" log lines)."""
    lines = log.read_text(errors="replace").splitlines()[since:]
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    return [entry["page_render"] for entry in entries if entry.get("message") == "rendered"]


def check_reports(seen: list[dict[str, dict[str, Any]]], left: set[str]) -> None:
    assert len(seen) == len(ORGANIZATIONS), seen
    # A page finds as many history entries as the first render did (the spare's warm-up
    # leaves one of ours, the same for every render), never one a page pushed.
    lengths = {report["before"].pop("historyLength") for report in seen}
    assert len(lengths) == 1, seen
    for number, report in enumerate(seen):
        assert report["before"] == {}, f"render {number} found what an earlier one left: {report}"
        assert report["after"].pop("pushed") is True, report["after"]
        report["after"].pop("historyLength")
        assert set(report["after"]) == left, report["after"]


async def render_back_to_back(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, design: pb.Design
) -> list[dict[str, dict[str, Any]]]:
    first = len(reports(page_server))
    for org in ORGANIZATIONS:
        rendering = await prepare(render, design, org=org)
        assert rendering.state == pb.RENDERING_STATE_PREPARED, rendering
    return reports(page_server)[first:]


async def test_nothing_a_page_leaves_is_seen_by_the_next_render(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    url = page_server.page("memory", memory_page(""))
    cached_before = page_server.count("/cacheable")
    seen = await render_back_to_back(render, page_server, pb.Design(url=url))
    check_reports(seen, LEFT_IN_ONE_RENDER)
    # The HTTP cache: every render asked the server again (the fetch and the image).
    assert page_server.count("/cacheable") - cached_before == 2 * len(ORGANIZATIONS)


async def test_a_reused_page_shows_nothing_of_the_renders_before(
    render_instance: RenderInstance, page_server: PageServer
) -> None:
    """`html` designs run on a page reused from render to render (wiped between them); the
    same readings find nothing, in one organization and across organizations."""
    since = len(render_instance.log_path.read_text(errors="replace").splitlines())
    cached_before = page_server.count("/cacheable")
    design = pb.Design(html=memory_page(page_server.url("")))
    seen = await render_back_to_back(render_instance.stub, page_server, design)
    check_reports(seen, LEFT_WITHOUT_AN_ORIGIN)
    # Neither the HTTP cache nor the renderer's memory cache answered a later render.
    assert page_server.count("/cacheable") - cached_before == 2 * len(ORGANIZATIONS)
    # The renders did share a page: the wipe, not a new context, is what was tested.
    numbers = page_renders(render_instance.log_path, since)
    assert len(numbers) == len(ORGANIZATIONS) and max(numbers) > 1, numbers
