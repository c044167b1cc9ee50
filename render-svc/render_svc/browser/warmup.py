"""Warming a spare page before any render uses it: our own sample design, drawn and captured.

A spare page lives in a brand-new renderer process. Its first document, first sticker
drawing and first screenshot pay one-time costs (compiling the component script, loading
the sticker fonts into the renderer, setting up the compositor's capture surface) that a
long-lived page would not. The pool runs this warm-up off the render's path, while the
spare waits; the render then gets a new frame for the caller's design. Nothing of an
organization is involved: the sample is ours and the context is still new.
"""

from __future__ import annotations

from render_svc.browser.capture import capture_image
from render_svc.browser.pool import Lease
from render_svc.stickers import RawElement, plan_page

# One sticker of each drawing family (pill, poll card, countdown), in both font weights.
SAMPLE = (
    "<!doctype html><html><body style='margin:0;width:1080px;height:1920px'>"
    "<photoapp-story>"
    '<photoapp-hashtag hashtag="storypost"></photoapp-hashtag>'
    '<photoapp-poll question="Ready?" options=\'["Yes","No"]\'></photoapp-poll>'
    '<photoapp-countdown title="Soon" end-time="2030-01-01T00:00:00Z"></photoapp-countdown>'
    "</photoapp-story></body></html>"
)


async def warm_up(lease: Lease) -> None:
    """Loads, draws and captures the sample in a page's render frame (a render's steps)."""
    document, key = lease.document, lease.key
    await document.set_content(SAMPLE, wait_until="load")
    raw = await document.evaluate("(key) => window[key] ? window[key].collect() : []", key)
    plans = plan_page([RawElement.from_js(item) for item in raw]).stickers
    await document.evaluate(
        "([key, plans]) => window[key] && window[key].draw(plans, false, Date.now())",
        [key, [plan.to_js() for plan in plans]],
    )
    await capture_image(await lease.devtools())
