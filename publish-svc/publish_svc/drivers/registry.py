"""Which driver speaks to which platform (uppercase names as account-svc lists them)."""

from __future__ import annotations

import httpx

from publish_svc.config import PublishSettings
from publish_svc.drivers.base import Driver
from publish_svc.drivers.clipapp import ClipappDriver
from publish_svc.drivers.http import PlatformClient
from publish_svc.drivers.photoapp import PhotoappDriver
from publish_svc.drivers.social import SocialDriver
from storypost_runtime.vocabulary import CLIPAPP, PHOTOAPP, SOCIAL_API_PLATFORMS


class DriverRegistry:
    def __init__(self, http: httpx.AsyncClient, settings: PublishSettings) -> None:
        photoapp = PlatformClient(
            http=http,
            base_url=settings.platform_url("photoapp") + "/photoapp/v1",
            platform=PHOTOAPP.key,
        )
        clipapp = PlatformClient(
            http=http,
            base_url=settings.platform_url("clipapp") + "/clipapp/v2",
            platform=CLIPAPP.key,
        )
        self._drivers: dict[str, Driver] = {
            PHOTOAPP.name: PhotoappDriver(photoapp),
            CLIPAPP.name: ClipappDriver(clipapp),
        }
        social_base = settings.platform_url("social")
        for platform in SOCIAL_API_PLATFORMS:
            key = platform.key
            self._drivers[platform.name] = SocialDriver(
                PlatformClient(http=http, base_url=f"{social_base}/{key}/v1", platform=key)
            )

    def get(self, platform: str) -> Driver:
        driver = self._drivers.get(platform.upper())
        if driver is None:
            raise KeyError(f"no driver for platform {platform}")
        return driver
