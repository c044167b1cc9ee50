"""Issue #21 item 1: a page has no way out but render-svc's checked fetcher.

A canary on loopback (a TCP listener and a UDP socket on one port, not exempt from the
sandbox rules) must see nothing, not even a bare connection or one datagram, from pages that
try every way a browser has of sending something: requests of every kind, workers, WebRTC's
STUN and TURN over UDP and TCP, hints (preconnect, prefetch, dns-prefetch), beacons and
keep-alive requests sent as the page goes away, sockets, popups, downloads. The walls below
the page (browser/jail.py) are what is tested: whatever Playwright's routes would miss has
no network to go to.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from render_svc.browser import jail
from render_svc.browser.memory import arguments, descendants, processes
from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.conftest import RenderInstance
from tests.integration.render.rendering import prepare, story_page
from tests.support.canary import WireCanary, wire_canary
from tests.support.pages import PageServer

pytestmark = pytest.mark.integration

# Late senders (pagehide beacons, WebRTC retransmits, keep-alive fetches) get this long.
LATE_SECONDS = 3.0


@pytest.fixture
def wire() -> Iterator[WireCanary]:
    with wire_canary() as canary:
        yield canary


def every_way_out(port: int) -> str:
    """A design that tries every way out towards 127.0.0.1:port."""
    t = f"http://127.0.0.1:{port}"
    u = f"127.0.0.1:{port}"
    worker = (
        f"fetch('{t}/worker-fetch').catch(()=>{{}});"
        f"try{{new WebSocket('ws://{u}/worker-ws')}}catch(e){{}}"
        f"try{{new EventSource('{t}/worker-events')}}catch(e){{}}"
        f"try{{importScripts('{t}/import.js')}}catch(e){{}}"
    )
    script = f"""
const T = "{t}", U = "{u}";
const attempt = (f) => {{ try {{ const r = f(); if (r && r.catch) r.catch(() => {{}}); }}
  catch (e) {{}} }};
attempt(() => fetch(T + "/fetch", {{method: "POST", body: "x", mode: "no-cors"}}));
attempt(() => fetch(T + "/keepalive", {{method: "POST", body: "x", keepalive: true,
  mode: "no-cors"}}));
attempt(() => {{ const x = new XMLHttpRequest(); x.open("POST", T + "/xhr"); x.send("x"); }});
attempt(() => navigator.sendBeacon(T + "/beacon", "secret=1"));
attempt(() => new EventSource(T + "/events"));
attempt(() => new WebSocket("ws://" + U + "/socket"));
attempt(() => new WebTransport("https://" + U + "/wt").ready);
const code = URL.createObjectURL(new Blob([{worker!r}], {{type: "text/javascript"}}));
attempt(() => new Worker(code));
attempt(() => new SharedWorker(code));
attempt(() => navigator.serviceWorker.register(T + "/sw.js"));
attempt(() => import(T + "/module.js"));
attempt(() => {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: "stun:" + U}},
    {{urls: "turn:" + U + "?transport=udp", username: "u", credential: "p"}},
    {{urls: "turn:" + U + "?transport=tcp", username: "u", credential: "p"}}]}});
  pc.createDataChannel("d");
  pc.createOffer().then((o) => pc.setLocalDescription(o));
  window.keep = pc;
}});
attempt(() => {{ const a = document.createElement("a"); a.href = T + "/ping-target";
  a.ping = T + "/ping"; a.target = "_blank"; document.body.append(a); a.click(); }});
attempt(() => window.open(T + "/popup"));
attempt(() => {{ const f = document.createElement("form"); f.method = "POST";
  f.action = T + "/form"; f.target = "_blank"; document.body.append(f); f.submit(); }});
attempt(() => {{ const i = new Image(); i.src = T + "/image-object.png"; }});
addEventListener("pagehide", () => {{
  navigator.sendBeacon(T + "/pagehide-beacon", "x");
  fetch(T + "/pagehide-fetch", {{keepalive: true, method: "POST", body: "x", mode: "no-cors"}});
}});
"""
    head = (
        f'<style>@import url("{t}/import.css");'
        f'@font-face{{font-family:leak;src:url("{t}/font.woff2")}}'
        f'h1{{font-family:leak;background-image:url("{t}/background.png")}}</style>'
        f'<link rel="preconnect" href="{t}"><link rel="dns-prefetch" href="{t}">'
        f'<link rel="prefetch" href="{t}/prefetch"><link rel="prerender" href="{t}/prerender">'
        f'<link rel="preload" as="fetch" href="{t}/preload" crossorigin>'
        f'<link rel="modulepreload" href="{t}/modulepreload.js">'
        f'<link rel="stylesheet" href="{t}/style.css"><link rel="icon" href="{t}/favicon.ico">'
        f'<link rel="manifest" href="{t}/manifest.json">'
    )
    body = (
        f'<h1>ways out</h1><img src="{t}/img.png"><img srcset="{t}/srcset.png 2x">'
        f'<iframe src="{t}/frame"></iframe><video src="{t}/video.mp4" poster="{t}/poster.png">'
        f'</video><audio src="{t}/audio.mp3"></audio><object data="{t}/object"></object>'
        f'<embed src="{t}/embed"><input type="image" src="{t}/input.png">'
        f'<svg width="10" height="10"><image href="{t}/svg.png" width="10" height="10"/></svg>'
        f"<script>{script}</script>"
    )
    page = story_page(body)
    return page.replace("<head>", "<head>" + head, 1)


def assert_untouched(wire: WireCanary) -> None:
    assert wire.seen() == [], f"the canary on loopback was reached: {wire.seen()}"


async def try_every_way(
    render: render_pb2_grpc.RenderServiceAsyncStub, design: pb.Design, wire: WireCanary
) -> list[str]:
    rendering = await prepare(render, design)
    assert rendering.state == pb.RENDERING_STATE_PREPARED, rendering
    await asyncio.sleep(LATE_SECONDS)
    assert_untouched(wire)
    warnings = list(rendering.warnings)
    # What was refused while the page loaded is named (images, styles: the load waits for
    # them). A script's fetch is refused all the same, but may reach the router after the
    # capture on a loaded machine, when no warning can name it any more (docs/render.md).
    assert any(f"127.0.0.1:{wire.port}/img.png" in w for w in warnings), warnings
    assert any(f"127.0.0.1:{wire.port}/style.css" in w for w in warnings), warnings
    return warnings


async def test_an_html_design_has_no_way_out(
    render: render_pb2_grpc.RenderServiceAsyncStub, wire: WireCanary
) -> None:
    await try_every_way(render, pb.Design(html=every_way_out(wire.port)), wire)


async def test_a_url_design_has_no_way_out(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, wire: WireCanary
) -> None:
    # Served from an exempt host: its own requests to that host load, the canary's do not.
    page = page_server.page("ways-out", every_way_out(wire.port))
    await try_every_way(render, pb.Design(url=page), wire)


@pytest.mark.parametrize(
    "leave",
    [
        "location.href = T + '/navigate'",
        "document.write('<meta http-equiv=refresh content=\"0;url=' + T + '/refresh\">')",
        "location.replace('ws://' + U + '/ws-navigation')",
        # A cross-origin download link is a navigation in Chromium.
        "const a = document.createElement('a'); a.href = T + '/download'; a.download = 'x';"
        " document.body.append(a); a.click()",
    ],
)
async def test_leaving_the_page_reaches_nothing(
    render: render_pb2_grpc.RenderServiceAsyncStub, wire: WireCanary, leave: str
) -> None:
    t = f"http://127.0.0.1:{wire.port}"
    html = story_page(f'<script>const T = "{t}", U = "127.0.0.1:{wire.port}"; {leave};</script>')
    try:
        rendering = await prepare(render, pb.Design(html=html))
        assert rendering.state == pb.RENDERING_STATE_PREPARED
    except grpc.aio.AioRpcError as error:
        # A design that navigates away is a clear 400.
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    await asyncio.sleep(LATE_SECONDS)
    assert_untouched(wire)


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    items = raw.decode(errors="replace").split("\0")
    return dict(item.split("=", 1) for item in items if "=" in item)


def _render_svc_pid(grpc_port: str) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (
                    "render_svc" in arguments(int(entry.name))
                    and _environ(int(entry.name)).get("STORYPOST_GRPC_PORT") == grpc_port
                ):
                    return int(entry.name)
    raise AssertionError("render-svc's process was not found")


async def test_the_browser_holds_no_secret(
    render: render_pb2_grpc.RenderServiceAsyncStub, render_instance: RenderInstance
) -> None:
    await prepare(render, pb.Design(html=story_page("<h1>warm</h1>")))
    service = _render_svc_pid(render_instance.env["STORYPOST_GRPC_PORT"])
    children = descendants(service, processes())
    browsers = [p for p in children if "chrom" in " ".join(arguments(p))]
    assert browsers, "no browser process under render-svc"
    for pid in children:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            leaked = [name for name in _environ(pid) if name.startswith("STORYPOST_")]
            assert leaked == [], f"process {pid} inherited {leaked}"
    # From inside a jail like the browser's (same uid, own user namespace), render-svc's
    # environment is out of reach; the jailed process's own is not (the read itself works).
    refused = subprocess.run(
        jail.command("/bin/cat", f"/proc/{service}/environ"), capture_output=True
    )
    assert refused.returncode != 0 and b"Permission denied" in refused.stderr, refused
    own = subprocess.run(jail.command("/bin/cat", "/proc/self/environ"), capture_output=True)
    assert own.returncode == 0 and b"PATH=" in own.stdout, own
