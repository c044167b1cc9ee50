"""render-svc's scratch space (/tmp) holds what its own limits let it take on at once.

Video sources are fetched whole to local disk while a render runs, and wait there for a
composite slot (at most `render_kept_video_sources` of them; the others are fetched again),
where the composite's output joins them. The need is read from the code's
limits (render_svc.config defaults, the overlay's environment, the finisher's slots), not
written down here.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import PurePosixPath
from typing import Any

import pytest

from render_svc.config import RenderSettings
from render_svc.finisher import Finisher
from tests.deploy.rendered import containers, deployment_envs, quantity_bytes, setting
from tests.deploy.service_calls import package_dir
from tests.deploy.support import of_kind, render

TARGETS = ("base", "overlays/dev", "overlays/prod")
# Besides video files: the browsers' profiles (small: render contexts are off the record,
# what a page stores stays in memory),
# captured overlays and previews (a few MB each).
OTHER_FILES_BYTES = 1024**3


def composite_slots(env: dict[str, str]) -> int:
    """Composites running at once: the setting app.py passes to Finisher, else its default."""
    tree = ast.parse((package_dir("render-svc") / "app.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finisher":
            for keyword in node.keywords:
                if keyword.arg == "composite_concurrency":
                    value = keyword.value
                    assert isinstance(value, ast.Attribute), ast.unparse(value)
                    return int(setting(RenderSettings, env, value.attr))
    default = inspect.signature(Finisher).parameters["composite_concurrency"].default
    assert isinstance(default, int)
    return default


def scratch_needed(env: dict[str, str]) -> int:
    """Bytes /tmp must hold when every limit is reached at once."""
    video = int(setting(RenderSettings, env, "render_max_video_bytes"))
    renders = int(setting(RenderSettings, env, "render_concurrency"))
    slots = composite_slots(env)
    kept = int(setting(RenderSettings, env, "render_kept_video_sources"))
    # Each render may be fetching a source; prepared sources wait for their composite (at
    # most `kept`; past that they are fetched again); each composite holds a source and its
    # output, which -maxrate (video_max_bitrate, 25 Mbps) keeps under the 30 Mbps rule.
    return (renders + kept) * video + slots * 2 * video + OTHER_FILES_BYTES


def tmp_volume(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = containers(deployment)
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    volume: dict[str, Any] = volumes[mount["name"]]
    return volume


# What the container itself may write on the node's disk besides /tmp: its logs (the root
# filesystem is read-only). The work files never count against the node's ephemeral storage.
NODE_DISK_BYTES = 2 * 1024**3


@pytest.mark.parametrize("target", TARGETS)
def test_render_svc_scratch_space_holds_what_its_limits_allow(target: str) -> None:
    docs = render(target)
    deployment = of_kind(docs, "Deployment")["render-svc"]
    env = deployment_envs(docs)["render-svc"]
    # The work files go to a temporary directory under /tmp unless a work dir is set.
    work_dir = PurePosixPath(str(setting(RenderSettings, env, "render_work_dir")) or "/tmp")
    assert work_dir.is_relative_to("/tmp"), f"{target}: work files outside /tmp: {work_dir}"
    volume = tmp_volume(deployment)
    # A generic ephemeral volume: a claim made and deleted with the pod, its capacity the
    # volume's (not an emptyDir on the node's disk, nor tmpfs, which would count as RAM).
    assert set(volume) == {"name", "ephemeral"}, f"{target}: /tmp is {volume}"
    claim = volume["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["accessModes"] == ["ReadWriteOnce"], target
    size = quantity_bytes(claim["resources"]["requests"]["storage"])
    needed = scratch_needed(env)
    assert size >= needed, f"{target}: /tmp is {size / 2**30:.1f} GiB, needs {needed / 2**30:.1f}"
    # The node is asked for the container's logs only, never for the videos' room.
    resources = containers(deployment)[0]["resources"]
    for kind in ("requests", "limits"):
        value = resources.get(kind, {}).get("ephemeral-storage")
        assert value is not None, f"{target}: no ephemeral-storage {kind}"
        assert quantity_bytes(value) <= NODE_DISK_BYTES, f"{target}: ephemeral-storage {value}"
    assert quantity_bytes(resources["requests"]["ephemeral-storage"]) <= quantity_bytes(
        resources["limits"]["ephemeral-storage"]
    )


def test_the_need_follows_the_settings() -> None:
    # The sizing reads the overlay's environment: more concurrent renders need more room.
    base = scratch_needed({})
    more = scratch_needed({"STORYPOST_RENDER_CONCURRENCY": "8"})
    video = RenderSettings.model_fields["render_max_video_bytes"].default
    assert more - base == 4 * video
    assert scratch_needed({"STORYPOST_RENDER_MAX_VIDEO_BYTES": str(video * 2)}) > base
