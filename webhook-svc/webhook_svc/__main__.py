"""Starts webhook-svc: `python -m webhook_svc`."""

from __future__ import annotations

from storypost_runtime.service import main as service_main
from webhook_svc.app import build
from webhook_svc.config import WebhookSettings


def main() -> None:
    service_main("webhook-svc", WebhookSettings, build)


if __name__ == "__main__":
    main()
