"""Platform tokens are encrypted at rest (Fernet: AES-128-CBC + HMAC-SHA256, key rotation)."""

from __future__ import annotations

from storypost_runtime.secret_box import SecretBox

# The runtime's secret box (webhook-svc keeps its signing secrets with it too).
TokenCipher = SecretBox

__all__ = ["TokenCipher"]
