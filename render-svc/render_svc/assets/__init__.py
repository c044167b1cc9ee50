"""Files injected into every rendered page: the component script and the bundled fonts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

# A host that never resolves: requests to it are answered from these files, in memory.
ASSET_ORIGIN = "https://assets.storypost.invalid"
FONT_BOLD = "DejaVuSans-Bold.ttf"
FONT_REGULAR = "DejaVuSans.ttf"


@dataclass(frozen=True)
class Assets:
    component_script: str
    # URL path -> (content type, body)
    files: dict[str, tuple[str, bytes]]

    def font_urls(self) -> dict[str, str]:
        return {
            "bold": f"{ASSET_ORIGIN}/fonts/{FONT_BOLD}",
            "regular": f"{ASSET_ORIGIN}/fonts/{FONT_REGULAR}",
        }

    def page_script(self, key: str) -> str:
        """The component script installed under `window[key]` (a context's init script)."""
        config = {"key": key, "fonts": self.font_urls()}
        return f"({self.component_script})({json.dumps(config)});"

    def lookup(self, url: str) -> tuple[str, bytes] | None:
        if not url.startswith(ASSET_ORIGIN + "/"):
            return None
        return self.files.get(url[len(ASSET_ORIGIN) :])


@cache
def load_assets() -> Assets:
    root = resources.files(__name__)
    return Assets(
        component_script=(root / "components.js").read_text(encoding="utf-8"),
        files={
            f"/fonts/{name}": ("font/ttf", (root / name).read_bytes())
            for name in (FONT_BOLD, FONT_REGULAR)
        },
    )
