"""Starts publish-svc: `python -m publish_svc`."""

from __future__ import annotations

from publish_svc.app import build
from publish_svc.config import PublishSettings
from storypost_runtime.service import main as service_main


def main() -> None:
    service_main("publish-svc", PublishSettings, build)


if __name__ == "__main__":
    main()
