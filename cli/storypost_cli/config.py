"""Where the `storypost` command finds the running stack (defaults match `make run`)."""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from storypost_runtime.settings import ServiceAddresses


class CliSettings(ServiceAddresses):
    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    public_url: str = "http://127.0.0.1:8080"

    def base_url(self, organization_id: str) -> str:
        return f"{self.public_url.rstrip('/')}/o/{organization_id}/api/v1"
