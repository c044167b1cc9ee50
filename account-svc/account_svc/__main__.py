"""Starts account-svc: `python -m account_svc`."""

from __future__ import annotations

from account_svc.app import build
from account_svc.config import AccountSettings
from storypost_runtime.service import main as service_main


def main() -> None:
    service_main("account-svc", AccountSettings, build)


if __name__ == "__main__":
    main()
