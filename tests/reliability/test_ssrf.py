"""Issue #12 item 6: SSRF. Page `url`s, in-page resources, video sources and webhook URLs
that point inward — loopback (in every spelling), private, link-local and metadata
addresses, `file:`/`ws:` schemes, redirects to them, host names that resolve to them — are
all refused, and a canary server on loopback never sees a request.

Complements tests/integration/render/test_sandbox.py (the plain spellings, one redirect) and
tests/unit/webhook/test_targets.py (the webhook address rules) with the tricky spellings,
every way a page can make a request, and the whole path through the public API.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import grpc
import pytest

from storypost.testing.stack import StackHandle
from storypost.webhook.v1 import webhook_pb2 as wpb
from storypost.webhook.v1 import webhook_pb2_grpc
from tests.reliability.support import IMAGE_STORY, LoopbackReceiver, video_story
from tests.support.api import Api, Org
from tests.support.pages import PageServer

pytestmark = pytest.mark.integration

BLOCK_REASON = re.compile(
    r"loopback|private|reserved|link-local|metadata|multicast|unspecified|credentials|"
    r"URLs are not allowed|not allowed"
)


def resolving_inward() -> list[str]:
    """Host names this machine resolves to a non-public address without DNS (the hosts
    file, the machine's own name): the offline stand-in for `localtest.me`-style names."""
    names = {socket.gethostname()}
    hosts = Path("/etc/hosts")
    if hosts.exists():
        for line in hosts.read_text().splitlines():
            fields = line.split("#", 1)[0].split()
            names.update(fields[1:])
    found = []
    for name in sorted(names):
        if name.rstrip(".").lower() == "localhost" or name.lower().endswith(".localhost"):
            continue  # refused by name already; the point here is resolution
        try:
            infos = socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)
        except OSError:
            continue
        addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
        if addresses and not any(a.is_global for a in addresses):
            found.append(name)
    return found


def loopback_spellings(port: int) -> list[str]:
    """The canary's address written every way a URL parser or resolver may accept."""
    return [
        f"http://127.0.0.1:{port}/",
        f"http://127.1:{port}/",
        f"http://2130706433:{port}/",
        f"http://0x7f000001:{port}/",
        f"http://0177.0.0.1:{port}/",
        f"http://[::ffff:127.0.0.1]:{port}/",
        f"http://[::ffff:7f00:1]:{port}/",
        f"http://0.0.0.0:{port}/",
        f"http://[::]:{port}/",
        f"http://localhost.:{port}/",
        f"http://canary.localhost:{port}/",
        f"http://user:secret@127.0.0.1:{port}/",
        *(f"http://{name}:{port}/" for name in resolving_inward()),
    ]


INWARD = [
    "http://[::1]/",
    "http://10.0.0.8/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.100.100.200/latest/meta-data/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://224.0.0.1/",
    "http://[2002:7f00:1::]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[::7f00:1]/",
]


@pytest.fixture
def fresh_canary(canary: PageServer) -> Iterator[PageServer]:
    canary.hits.clear()
    yield canary
    assert canary.hits == [], f"the canary on loopback was reached: {canary.hits}"


async def test_page_urls_pointing_inward_are_refused(
    rel_api: Api, rel_org: Org, fresh_canary: PageServer
) -> None:
    for url in [*loopback_spellings(fresh_canary.port), *INWARD]:
        draft = str(uuid.uuid4())
        answer = await rel_api.call(rel_org, "create-draft", {"draftUuid": draft, "url": url})
        assert answer.status_code == 400, (url, answer.text)
        message = answer.json()["errorMessage"]
        assert message.startswith(("the page url is not allowed", "the page url could not")), (
            url,
            message,
        )
        assert BLOCK_REASON.search(message), (url, message)
        gone = await rel_api.call(rel_org, "status-draft", {"draftUuid": draft})
        assert gone.status_code == 400, "nothing is stored for a refused page"


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ws://127.0.0.1/", "ftp://127.0.0.1/", "gopher://127.0.0.1/"]
)
async def test_page_urls_of_other_schemes_are_validation_errors(
    rel_api: Api, rel_org: Org, url: str
) -> None:
    answer = await rel_api.call(
        rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "url": url}
    )
    assert answer.status_code == 400
    assert answer.json()["validationErrorExplanation"]["url"] == [
        "must start with http:// or https://"
    ]


def every_request_kind(target: str, ws: str) -> str:
    """A page that asks for `target` in every way a page can make a request."""
    return (
        f'<img src="{target}img" width="4" height="4">'
        f'<link rel="stylesheet" href="{target}css">'
        f'<script src="{target}js"></script>'
        f'<iframe src="{target}frame" width="4" height="4"></iframe>'
        f'<object data="{target}object" width="4" height="4"></object>'
        f'<embed src="{target}embed" width="4" height="4">'
        f'<video src="{target}video" width="4" height="4"></video>'
        f'<audio src="{target}audio"></audio>'
        f"<style>@import url('{target}import'); body{{background:url('{target}bg')}}"
        f"@font-face{{font-family:x;src:url('{target}font')}} h6{{font-family:x}}</style>"
        "<h6>x</h6><script>"
        f"fetch('{target}fetch').catch(() => 0);"
        f"try {{ const x = new XMLHttpRequest(); x.open('GET', '{target}xhr'); x.send() }}"
        " catch (e) {}"
        f"try {{ navigator.sendBeacon('{target}beacon', 'x') }} catch (e) {{}}"
        f"try {{ new EventSource('{target}events') }} catch (e) {{}}"
        f"try {{ new WebSocket('{ws}') }} catch (e) {{}}"
        f"try {{ new Worker('{target}worker') }} catch (e) {{}}"
        f"try {{ navigator.serviceWorker.register('{target}sw') }} catch (e) {{}}"
        "</script>"
    )


async def test_in_page_requests_inward_are_blocked_and_the_page_still_renders(
    rel_api: Api, rel_org: Org, fresh_canary: PageServer
) -> None:
    port = fresh_canary.port
    targets = [*loopback_spellings(port), "file:///etc/passwd#", "http://169.254.169.254/x/"]
    for target in targets:
        html = IMAGE_STORY + every_request_kind(target, f"ws://{target[7:]}ws")
        answer = await rel_api.call(
            rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": html}
        )
        assert answer.status_code == 200, (target, answer.text)
        warnings = answer.json().get("warnings", [])
        assert any(w.startswith("blocked ") for w in warnings), (target, warnings)
    sockets = (
        IMAGE_STORY
        + "<script>"
        + "".join(
            f"try {{ new WebSocket('ws://{host}/ws') }} catch (e) {{}}"
            for host in (f"127.0.0.1:{port}", f"[::1]:{port}", f"localhost:{port}")
        )
        + "</script>"
    )
    answer = await rel_api.call(
        rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": sockets}
    )
    warnings = answer.json().get("warnings", [])
    assert sum(w.startswith("blocked WebSocket to") for w in warnings) == 3, warnings


async def test_a_page_navigating_inward_never_reaches_it(
    rel_api: Api, rel_org: Org, fresh_canary: PageServer
) -> None:
    target = f"http://127.0.0.1:{fresh_canary.port}/"
    pages = [
        f'<meta http-equiv="refresh" content="0;url={target}meta">' + IMAGE_STORY,
        f"<script>location.href = '{target}location'</script>" + IMAGE_STORY,
        f"<form id=f action='{target}form' method=post></form>"
        "<script>document.getElementById('f').submit()</script>" + IMAGE_STORY,
        f"<script>window.open('{target}popup')</script>" + IMAGE_STORY,
        f"<a id=a href='{target}link' download>x</a><script>a.click()</script>" + IMAGE_STORY,
    ]
    for html in pages:
        answer = await rel_api.call(
            rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": html}
        )
        # Rendered without the navigation, or refused as a page that went somewhere it may
        # not: either way a clear answer and nothing reached.
        assert answer.status_code in (200, 400), answer.text
        assert answer.json().get("errorMessage", "x"), answer.text


async def test_redirects_to_inward_addresses_are_refused_at_every_hop(
    rel_api: Api, rel_org: Org, redirector: PageServer, fresh_canary: PageServer
) -> None:
    """The redirector is a host the sandbox treats as public (like any site on the
    internet): whatever it redirects to is checked again."""
    inward = [
        *loopback_spellings(fresh_canary.port)[:8],
        "http://169.254.169.254/latest/meta-data/",
        "file:///etc/passwd",
    ]
    for target in inward:
        hop = redirector.url(f"/redirect?to={quote(target, safe='')}")
        two_hops = redirector.url(f"/redirect?to={quote(hop, safe='')}")
        page = await rel_api.call(
            rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "url": two_hops}
        )
        assert page.status_code == 400, (target, page.text)
        assert BLOCK_REASON.search(page.json()["errorMessage"]), (target, page.text)
    html = IMAGE_STORY + "".join(
        f'<img src="{redirector.url("/redirect?to=" + quote(t, safe=""))}" width="4">'
        for t in inward
    )
    rendered = await rel_api.call(
        rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": html}
    )
    assert rendered.status_code == 200, rendered.text
    blocked = [w for w in rendered.json()["warnings"] if w.startswith("blocked request to")]
    assert len(blocked) == len(inward), rendered.json()["warnings"]


async def test_video_sources_pointing_inward_are_refused(
    rel_api: Api, rel_org: Org, redirector: PageServer, fresh_canary: PageServer
) -> None:
    port = fresh_canary.port
    sources = [
        *loopback_spellings(port)[:6],
        "http://169.254.169.254/video.mp4",
        redirector.url("/redirect?to=" + quote(f"http://127.0.0.1:{port}/video.mp4", safe="")),
    ]
    for src in sources:
        answer = await rel_api.call(
            rel_org, "create-draft", {"draftUuid": str(uuid.uuid4()), "html": video_story(src)}
        )
        assert answer.status_code == 400, (src, answer.text)
        message = answer.json()["errorMessage"]
        assert "<photoapp-story> src" in message and BLOCK_REASON.search(message), message


async def test_webhook_urls_pointing_inward_are_refused(
    rel_stack: StackHandle, rel_org: Org, receiver: LoopbackReceiver
) -> None:
    urls = [
        "https://127.0.0.1/hook", "https://127.1/hook", "https://2130706433/hook",
        "https://0x7f000001/hook", "https://[::1]/hook", "https://[::ffff:127.0.0.1]/hook",
        "https://localhost/hook", "https://localhost./hook", "https://10.0.0.1/hook",
        "https://192.168.0.10/hook", "https://169.254.169.254/latest/meta-data/",
        "https://100.100.100.200/hook", "https://[fe80::1]/hook", "https://[fd00::1]/hook",
        "https://[64:ff9b::7f00:1]/hook", "https://[2002:7f00:1::]/hook",
        "https://0.0.0.0/hook", "https://127.0.0.2.nip.io/hook",
        "http://example.com/hook", "file:///etc/passwd", "ws://127.0.0.2/hook",
        "https://user:pw@127.0.0.2/hook",
        *(f"https://{name}/hook" for name in resolving_inward()),
    ]  # fmt: skip
    async with rel_stack.channel("webhook", 10) as channel:
        stub = webhook_pb2_grpc.WebhookServiceStub(channel)
        for url in urls:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.AddWebhook(
                    wpb.AddWebhookRequest(organization_id=rel_org.organization_id, url=url)
                )
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT, url
            assert raised.value.details(), url
        # The one exempt address of this stack is accepted: the rules are not just "refuse".
        added = await stub.AddWebhook(
            wpb.AddWebhookRequest(
                organization_id=rel_org.organization_id, url=receiver.url("/ssrf/ok")
            )
        )
        assert added.webhook_id
        listed = await stub.ListWebhooks(
            wpb.ListWebhooksRequest(organization_id=rel_org.organization_id)
        )
        assert [w.url for w in listed.webhooks] == [receiver.url("/ssrf/ok")]


async def test_webhook_deliveries_never_follow_redirects(
    rel_stack: StackHandle, rel_org: Org, receiver: LoopbackReceiver, fresh_canary: PageServer
) -> None:
    path = f"/ssrf/redirect/{uuid.uuid4().hex}"
    receiver.redirects[path] = f"http://127.0.0.1:{fresh_canary.port}/stolen"
    async with rel_stack.channel("webhook", 10) as channel:
        stub = webhook_pb2_grpc.WebhookServiceStub(channel)
        added = await stub.AddWebhook(
            wpb.AddWebhookRequest(organization_id=rel_org.organization_id, url=receiver.url(path))
        )
        sent = await stub.SendTest(
            wpb.SendTestRequest(
                organization_id=rel_org.organization_id, webhook_id=added.webhook_id
            )
        )
    assert len(receiver.received(path)) == 1
    assert sent.status == wpb.DELIVERY_STATUS_FAILED and sent.last_response_code == 302, sent
