"""Starts render-svc: `python -m render_svc`."""

from __future__ import annotations

from render_svc.app import build
from render_svc.config import RenderSettings
from storypost_runtime.service import main as service_main


def main() -> None:
    service_main("render-svc", RenderSettings, build)


if __name__ == "__main__":
    main()
