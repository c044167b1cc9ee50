"""Issue #21 item 2: nothing a page leaves behind is seen by a later render.

One page, rendered back to back in one organization and then in another: it first reads
every place a page can leave something (window.name, globals, localStorage, sessionStorage,
cookies, Cache Storage, IndexedDB, service workers, history entries, performance entries,
the HTTP cache), then leaves something in each and reads again. It reports both readings to the page
server. Every render must find nothing before it leaves its own; the reading after leaving
finds everything, which shows the readers work. The page's load event waits for its report
(an image the page server holds until the report arrives), so no render is captured and torn
down before its page has reported, however loaded the machine.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.rendering import prepare
from tests.integration.render.support import PageServer

pytestmark = pytest.mark.integration

PAGE = """<!doctype html><html><head><style>body{margin:0;width:1080px;height:1920px}</style>
</head><body><h1>memory</h1><img src="/hold" alt=""><script>
async function read() {
  const found = {};
  const note = (name, value) => { if (value) found[name] = String(value); };
  note("window.name", window.name);
  note("global", globalThis.leftBehind);
  note("localStorage", localStorage.getItem("left"));
  note("sessionStorage", sessionStorage.getItem("left"));
  note("cookie", document.cookie.includes("left=") && document.cookie);
  note("caches", (await caches.keys()).join(","));
  note("indexedDB", (await indexedDB.databases()).map((d) => d.name).join(","));
  try { note("serviceWorker",
    (await navigator.serviceWorker.getRegistrations()).length); } catch (e) {}
  found.historyLength = history.length;
  note("performance", performance.getEntriesByName("left").length);
  return found;
}
async function leave() {
  window.name = "left";
  globalThis.leftBehind = "left";
  localStorage.setItem("left", "1");
  sessionStorage.setItem("left", "1");
  document.cookie = "left=1; max-age=3600";
  await (await caches.open("left")).put("/left", new Response("left"));
  await new Promise((done) => {
    const open = indexedDB.open("left");
    open.onupgradeneeded = () => open.result.createObjectStore("s");
    open.onsuccess = () => { open.result.close(); done(); };
    open.onerror = done;
  });
  try { await navigator.serviceWorker.register("/sw.js"); } catch (e) {}
  history.pushState({}, "", "#left");
  performance.mark("left");
  await fetch("/cacheable");
}
(async () => {
  const before = await read();
  await leave();
  const after = await read();
  after.pushed = history.length > before.historyLength;
  await fetch("/report?" + encodeURIComponent(JSON.stringify({before, after})));
})();
</script></body></html>"""

# What the reading after leaving must find: everything but what only outlives a document
# (service workers are blocked in every context, so none is ever registered).
LEFT_IN_ONE_RENDER = {
    "window.name", "global", "localStorage", "sessionStorage", "cookie", "caches",
    "indexedDB", "performance",
}  # fmt: skip


def reports(server: PageServer) -> list[dict[str, dict[str, Any]]]:
    found = []
    for hit in server.hits:
        parts = urlsplit(hit)
        if parts.path == "/report":
            found.append(json.loads(unquote(parts.query)))
    return found


async def test_nothing_a_page_leaves_is_seen_by_the_next_render(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    url = page_server.page("memory", PAGE)
    first = len(reports(page_server))
    cached_before = page_server.hits.count("/cacheable")
    organizations = ["memory-org-a", "memory-org-a", "memory-org-b", "memory-org-a"]
    for org in organizations:
        rendering = await prepare(render, pb.Design(url=url), org=org)
        assert rendering.state == pb.RENDERING_STATE_PREPARED, rendering
    seen = reports(page_server)[first:]
    assert len(seen) == len(organizations), seen
    # A page finds as many history entries as the first render did (the spare's warm-up
    # leaves one of ours, the same for every render), never one a page pushed.
    lengths = {report["before"].pop("historyLength") for report in seen}
    assert len(lengths) == 1, seen
    for number, report in enumerate(seen):
        assert report["before"] == {}, f"render {number} found what an earlier one left: {report}"
        assert report["after"].pop("pushed") is True, report["after"]
        report["after"].pop("historyLength")
        assert set(report["after"]) == LEFT_IN_ONE_RENDER, report["after"]
    # The HTTP cache: every render asked the server again.
    assert page_server.hits.count("/cacheable") - cached_before == len(organizations)
