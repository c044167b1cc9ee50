"""The document of an `html` render: a new sandboxed iframe of a top document that stays.

A reused page needs a new window for every render (globals, timers, workers and listeners
of the last render must end). A top-level navigation gives one but costs a navigation
through the browser process, about half of a render's CPU here (docs/render.md "Reuse"). A
new iframe is a new window too, at the price of a frame: the top document (ours, never
given to a design) stays and drops the last render's frame with everything in it.

The frame is sandboxed with scripts allowed and nothing else: its origin is opaque and its
own, so it keeps no storage, cookies or service and shared workers, cannot reach into the
top document (a different origin) or navigate it, and opens no popups, submits no forms and
starts no downloads.
"""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

NEW_FRAME = """() => {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.cssText =
    "position:fixed;left:0;top:0;width:100vw;height:100vh;margin:0;padding:0;border:0;display:block";
  const root = document.documentElement;
  (document.body || root.appendChild(document.createElement("body"))).replaceChildren(frame);
}"""


async def fresh_frame(page: Page, previous: Frame | None = None) -> Frame:
    """Replaces the page's render frame `previous` (and everything of the last render in
    it) with a new one."""
    await page.evaluate(NEW_FRAME)
    # Playwright reports a frame attached before the script that attached it returns, so
    # the new frame is the top document's only child now other than the one it replaced.
    children = [
        frame
        for frame in page.main_frame.child_frames
        if frame is not previous and not frame.is_detached()
    ]
    if len(children) == 1:
        return children[0]
    # Not one new child after all: ask the top document for its frame element's frame.
    element = await page.evaluate_handle("() => document.body.firstElementChild")
    try:
        frame = await element.as_element().content_frame()  # type: ignore[union-attr]
    finally:
        await element.dispose()
    if frame is None:
        raise PlaywrightError("the render frame did not attach")
    return frame
