"""The render sandbox: blocked addresses and schemes, redirects, WebSockets, settle time,
warnings of every kind, mention lookups, fresh contexts."""

from __future__ import annotations

import grpc
import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from tests.integration.render.conftest import SETTLE_SECONDS
from tests.integration.render.rendering import prepare, render_image, story_page
from tests.integration.render.support import decode_rgb, difference
from tests.support.api import Api, Org
from tests.support.pages import PageServer

pytestmark = pytest.mark.integration


async def expect_error(call: object, code: grpc.StatusCode, text: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call  # type: ignore[misc]
    assert raised.value.code() == code, raised.value.details()
    details = raised.value.details() or ""
    assert text in details, details
    return details


async def test_every_warning_kind_at_once(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, canary: PageServer
) -> None:
    blocked = [
        f"http://127.0.0.1:{canary.port}/pixel.png",
        "http://10.1.2.3/pixel.png",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:9/x.css",
    ]
    html = story_page(
        '<photoapp-sticker text="x"></photoapp-sticker>'
        '<photoapp-hashtag hashtag="ok" colour="red"></photoapp-hashtag>'
        '<photoapp-hashtag hashtag="two words"></photoapp-hashtag>'
        '<photoapp-mention username="ghost_user"></photoapp-mention>'
        '<photoapp-mention username="nobody_here" design="pink"></photoapp-mention>'
        '<photoapp-mention username="StoryPost.App"></photoapp-mention>'
        "<photoapp-poll options='[\"only\"]'></photoapp-poll>"
        '<photoapp-countdown end-time="next friday"></photoapp-countdown>'
        '<photoapp-quiz options=\'["A","B"]\' correct-answer="2"></photoapp-quiz>'
        '<photoapp-emoji-slider color="blue"></photoapp-emoji-slider>'
        '<photoapp-link url="https://a.example" style="position:absolute;left:20px;top:300px">'
        '<photoapp-hashtag hashtag="nested"></photoapp-hashtag></photoapp-link>'
        '<photoapp-location location="Off canvas" style="position:absolute;left:900px;top:40px">'
        "</photoapp-location>"
        '<photoapp-question style="display:none"></photoapp-question>'
        + "".join(f'<img src="{url}" width="1" height="1">' for url in blocked)
        + f"<script>new WebSocket('ws://127.0.0.1:{canary.port}/socket')</script>",
        top=260,
    )
    rendering = await prepare(render, pb.Design(html=html))
    warnings = list(rendering.warnings)

    def has(text: str) -> None:
        assert any(text in w for w in warnings), f"no warning with {text!r} in {warnings}"

    has("unknown element <photoapp-sticker> is ignored")
    has('unknown attribute "colour" on <photoapp-hashtag> #1 is ignored')
    has('invalid hashtag "two words" on <photoapp-hashtag> #2')
    has('invalid design "pink" on <photoapp-mention> #2')
    has('invalid options "[\\"only\\"]" on <photoapp-poll> #1')
    has('invalid end-time "next friday" on <photoapp-countdown> #1')
    has('invalid correct-answer "2" on <photoapp-quiz> #1')
    has('invalid color "blue" on <photoapp-emoji-slider> #1')
    has("<photoapp-hashtag> #3 is inside another sticker and is ignored")
    has("<photoapp-location> #1 extends beyond the 1080x1920 canvas")
    has("<photoapp-question> #1 is not visible on the canvas and is ignored")
    has("stickers overlap: <photoapp-hashtag> #1 and <photoapp-link> #1")
    has("mention @ghost_user: photoapp has no user with this username")
    has("mention @nobody_here was not resolved: the organization has no connected photoapp")
    has(f"blocked request to {blocked[0]}: loopback address")
    has(f"blocked request to {blocked[1]}: private or reserved address")
    has(f"blocked request to {blocked[2]}: link-local or metadata address")
    has(f"blocked request to {blocked[3]}: loopback address")
    has(f"blocked WebSocket to ws://127.0.0.1:{canary.port}/socket")
    assert canary.hits == [], "nothing may reach a loopback address that is not exempt"

    mentions = [s for s in rendering.stickers if s.kind == "mention"]
    resolved = [m for m in mentions if m.photoapp_user_id]
    assert len(resolved) == 1
    assert resolved[0].attributes["username"] == "storypost.app"
    assert resolved[0].photoapp_user_id == "17841400000000042"
    kinds = sorted(s.kind for s in rendering.stickers)
    assert "question" not in kinds and "sticker" not in kinds


async def test_a_busy_mention_lookup_fails_the_call_and_stores_nothing(
    render: render_pb2_grpc.RenderServiceAsyncStub,
) -> None:
    html = story_page('<photoapp-mention username="busy_account"></photoapp-mention>')
    rendering_id = "busy-mention-1"
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await prepare(render, pb.Design(html=html), rendering_id=rendering_id)
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "busy" in (raised.value.details() or "")
    await expect_error(
        render.GetRendering(
            pb.GetRenderingRequest(organization_id="render-tests-org", rendering_id=rendering_id)
        ),
        grpc.StatusCode.NOT_FOUND,
        "not found",
    )


async def test_redirects_to_private_addresses_are_followed_by_us_and_refused(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer, canary: PageServer
) -> None:
    target = canary.url("/secret.png")
    redirect = page_server.url(f"/redirect?to={target}")
    page = page_server.page(
        "redirecting-resources", story_page(f'<img src="{redirect}" width="10" height="10">')
    )
    rendering = await prepare(render, pb.Design(url=page))
    assert any(f"blocked request to {redirect}: loopback address" in w for w in rendering.warnings)
    # The page itself redirecting to a private address is a bad url (400).
    await expect_error(
        prepare(render, pb.Design(url=page_server.url(f"/redirect?to={target}"))),
        grpc.StatusCode.INVALID_ARGUMENT,
        "the page url could not be loaded: loopback address",
    )
    assert canary.hits == []
    # An allowed redirect is followed: the page is rendered from its final address.
    final = page_server.page(
        "final", story_page('<photoapp-hashtag hashtag="moved"></photoapp-hashtag>')
    )
    moved = await prepare(render, pb.Design(url=page_server.url(f"/redirect?to={final}")))
    assert [s.kind for s in moved.stickers] == ["hashtag"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:9/", "loopback address"),
        ("http://localhost:9/", "loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "link-local or metadata address"),
        ("http://10.0.0.8/page", "private or reserved address"),
        ("http://[::1]:9/", "loopback address"),
    ],
)
async def test_a_blocked_page_url_is_a_400(api: Api, org: Org, url: str, reason: str) -> None:
    response = await api.call(
        org, "create-draft", {"draftUuid": "6f1e7a52-54a1-4c4b-9a53-58e0c0b5c0a1", "url": url}
    )
    assert response.status_code == 400, response.text
    assert response.json()["errorMessage"] == f"the page url is not allowed: {reason}"
    status = await api.call(
        org, "status-draft", {"draftUuid": "6f1e7a52-54a1-4c4b-9a53-58e0c0b5c0a1"}
    )
    assert status.status_code == 400, "nothing was stored"


async def test_a_page_that_never_settles_is_a_clear_error(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    slow = story_page(f'<img src="{page_server.url("/wait?ms=30000")}" width="10" height="10">')
    await expect_error(
        prepare(render, pb.Design(html=slow)),
        grpc.StatusCode.INVALID_ARGUMENT,
        f"the page did not finish loading within {SETTLE_SECONDS} s",
    )
    busy_js = story_page("<script>setTimeout(() => { while (true) {} }, 0)</script>")
    await expect_error(
        prepare(render, pb.Design(html=busy_js)),
        grpc.StatusCode.INVALID_ARGUMENT,
        f"the page did not settle within {SETTLE_SECONDS} s",
    )
    # The pool recovers: the next render works.
    ok = await prepare(render, pb.Design(html=story_page("<h1>fine</h1>")))
    assert ok.state == pb.RENDERING_STATE_PREPARED


async def test_elements_a_page_changes_while_it_settles_are_read_as_they_end(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    # render-svc reads the elements while the page settles; this page changes them after a
    # request it starts at its load event, within the window: 300 ms later, long after the
    # first reading.
    late = page_server.url("/wait?ms=300")
    html = story_page(
        '<photoapp-hashtag hashtag="before"></photoapp-hashtag>'
        '<photoapp-link url="https://gone.example"></photoapp-link>'
        "<script>addEventListener('load', () => fetch('" + late + "').then((r) => r.text())"
        ".then(() => {"
        " document.querySelector('photoapp-hashtag').setAttribute('hashtag', 'after');"
        " document.querySelector('photoapp-link').remove();"
        " const added = document.createElement('photoapp-location');"
        " added.setAttribute('location', 'Late');"
        " document.querySelector('photoapp-hashtag').after(added); }))</script>"
    )
    asked = page_server.count("/wait")
    rendering = await prepare(render, pb.Design(html=html))
    assert page_server.count("/wait") == asked + 1
    found = [(s.kind, dict(s.attributes)) for s in rendering.stickers]
    assert found == [("hashtag", {"hashtag": "after"}), ("location", {"location": "Late"})]
    assert all(s.width > 0 for s in rendering.stickers), list(rendering.stickers)


async def test_a_sticker_the_page_spoils_while_it_settles_is_drawn_no_more(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    # Drawn while the page settles, then made invalid by the page: the capture must not
    # keep the first drawing.
    late = page_server.url("/wait?ms=300")
    spoil = (
        "<script>addEventListener('load', () => fetch('" + late + "').then((r) => r.text())"
        ".then(() => document.querySelector('photoapp-hashtag')"
        ".setAttribute('hashtag', 'two words')))</script>"
    )
    spoiled, spoiled_jpeg = await render_image(
        render, story_page('<photoapp-hashtag hashtag="before"></photoapp-hashtag>' + spoil)
    )
    assert list(spoiled.stickers) == []
    assert any('invalid hashtag "two words"' in w for w in spoiled.warnings), spoiled.warnings
    _, invalid_jpeg = await render_image(
        render, story_page('<photoapp-hashtag hashtag="two words"></photoapp-hashtag>')
    )
    _, drawn_jpeg = await render_image(
        render, story_page('<photoapp-hashtag hashtag="before"></photoapp-hashtag>')
    )
    invalid = decode_rgb(invalid_jpeg)
    assert difference(decode_rgb(spoiled_jpeg), invalid).strong < 0.001
    assert difference(decode_rgb(drawn_jpeg), invalid).strong > 0.005  # a sticker shows


async def test_a_page_that_scrolls_while_it_settles_is_captured_from_its_top(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    # Below the canvas, a red block a scrolled page would show.
    below = (
        '<div style="position:absolute;left:0;top:1920px;width:1080px;height:3000px;'
        'background:#d01010"></div>'
    )
    late = page_server.url("/wait?ms=300")
    scroll = (
        "<script>addEventListener('load', () => fetch('" + late + "').then((r) => r.text())"
        ".then(() => window.scrollTo(0, 1500)))</script>"
    )
    hashtag = '<photoapp-hashtag hashtag="top"></photoapp-hashtag>'
    scrolled, scrolled_jpeg = await render_image(
        render, story_page(hashtag, top=120) + below + scroll
    )
    still, still_jpeg = await render_image(render, story_page(hashtag, top=120) + below)
    assert difference(decode_rgb(scrolled_jpeg), decode_rgb(still_jpeg)).strong < 0.001
    assert [(s.x, s.y) for s in scrolled.stickers] == [(s.x, s.y) for s in still.stickers]


async def test_every_render_gets_a_fresh_context(
    render: render_pb2_grpc.RenderServiceAsyncStub, page_server: PageServer
) -> None:
    # A page that leaves state behind (a cookie on its own origin, a global) ...
    page_server.page(
        "leaves-state",
        "<script>document.cookie='sp=1; max-age=3600'; window.leftover = 1;</script>"
        "<photoapp-hashtag hashtag='first'></photoapp-hashtag>",
    )
    # ... and a page on the same origin that shows an unknown element when it sees any.
    probe = page_server.page(
        "sees-state",
        "<script>if (document.cookie.includes('sp=1') || window.leftover) {"
        "document.write('<photoapp-leak></photoapp-leak>')}</script>"
        "<photoapp-hashtag hashtag='second'></photoapp-hashtag>",
    )
    await prepare(render, pb.Design(url=page_server.url("/page/leaves-state")))
    second = await prepare(render, pb.Design(url=probe))
    assert not any("photoapp-leak" in w for w in second.warnings), list(second.warnings)
    # html designs have no origin at all: no cookies, no storage.
    sandboxed = await prepare(
        render,
        pb.Design(
            html="<script>try { localStorage.setItem('a', 'b') } catch (e) {"
            "document.write('<photoapp-no-storage></photoapp-no-storage>') }</script>"
        ),
    )
    assert "unknown element <photoapp-no-storage> is ignored" in sandboxed.warnings
