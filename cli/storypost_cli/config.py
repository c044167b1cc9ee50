"""Where the `storypost` command finds the running stack (defaults match `make run`)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import SettingsConfigDict

from storypost_cli.stack.credentials import admin_credential
from storypost_runtime.service_auth import TokenSigner, caller_signer
from storypost_runtime.settings import ServiceAddresses


def default_data_dir() -> Path:
    """`.data/` in the repository root (an editable install), else in the working directory."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file():
        return root / ".data"
    return Path.cwd() / ".data"


class CliSettings(ServiceAddresses):
    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    public_url: str = "http://127.0.0.1:8080"

    def base_url(self, organization_id: str) -> str:
        return f"{self.public_url.rstrip('/')}/o/{organization_id}/api/v1"

    def signer(self) -> TokenSigner | None:
        """Signs as STORYPOST_SERVICE_KEY, else as the operator of `make run`'s stack (its
        data directory keeps the key), else not at all (a stack without caller keys)."""
        return caller_signer(self.service_key or admin_credential(default_data_dir()) or "")
