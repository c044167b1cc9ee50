"""A newcomer's machine: the README's two commands on a stock Debian 13 container.

`make test-newcomer` runs it (minutes; part of `make reliability`, not of `make test`): a
container of the stock `debian:trixie-slim` (scripts/images/base-image.sh builds it here with
debootstrap where no registry answers), nothing of ours installed in it, clones the repository's
committed HEAD (a `git bundle`), installs what a bare Debian lacks to clone and run make (git,
make: the README says so), runs `make run` until its ready line, then the README's quickstart
(login, sandbox connect, a story scheduled with --wait until executed), stops `make run` with
Ctrl-C (SIGINT to its process group) and checks that nothing of the stack is left running.

The container reaches apt and PyPI the way the image builds do (scripts/images/build.sh): the
host's Debian mirror and the host's way out, here through a network of its own (NAT, so the
stack's fixed ports never meet another run's), with the host's proxy settings and the host's CA
bundle for pip (an intercepting proxy's CA). The run removes its container and network, also
when it fails or is interrupted; the engine (scripts/images/engine.sh) stops its own dockerd.

STORYPOST_NEWCOMER_INCLUDE="path ..." copies those paths of the working tree over the clone
(committed there, in a scratch clone), to try work before it is committed;
STORYPOST_NEWCOMER_REV=<commit> tests that commit instead of HEAD (which commit broke it?).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = os.environ.get("STORYPOST_BASE_IMAGE", "debian:trixie-slim")
READY = re.compile(r"storypost ready: (?P<base>\S+) token (?P<token>\S+)")
ORG = re.compile(r"/o/(?P<org>[^/]+)/api/v1")
# What must be gone after Ctrl-C: the stack's processes and make itself.
LEFTOVER = re.compile(r"storypost|nats-server|weed|chrom|headless_shell|mongoeco|python|make")
READY_WITHIN_S = 45 * 60  # a first `make run` installs Debian packages and the venv
STOP_WITHIN_S = 90
STORY_HTML = '<photoapp-story><h1 style="font-size:96px">Hello</h1></photoapp-story>\n'
# The host's proxy and index settings, passed on as the image builds get them (host network).
PASSED_ENV = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
CA_IN_CONTAINER = "/run/storypost-host-ca.crt"
CLONE = "/root/storypost"

pytestmark = pytest.mark.skipif(
    os.environ.get("STORYPOST_NEWCOMER_TEST") != "1",
    reason="the newcomer test runs in `make test-newcomer` (minutes, a Docker engine)",
)

_started = time.monotonic()


def say(message: str) -> None:
    elapsed = int(time.monotonic() - _started)
    print(f"[newcomer {elapsed // 60:02d}:{elapsed % 60:02d}] {message}", flush=True)


def docker_cli() -> str:
    found = os.environ.get("DOCKER") or (
        "/usr/bin/docker" if Path("/usr/bin/docker").exists() else shutil.which("docker")
    )
    assert found, "no docker CLI: run this test through `make test-newcomer`"
    return found


class Container:
    """One container of the stock base image, removed (with its network) by `remove`."""

    def __init__(self, docker: str, name: str) -> None:
        self.docker = docker
        self.name = name
        self.network = f"{name}-net"

    def start(self, bundle: Path, seccomp: Path) -> None:
        subprocess.run(
            [self.docker, "network", "create", "--label", "storypost.newcomer=1", self.network],
            check=True,
            capture_output=True,
        )
        options = ["--network", self.network, "--init", "--shm-size", "1g"]
        # render-svc's browser jail needs user namespaces, which the default profile refuses.
        options += ["--security-opt", f"seccomp={seccomp}"]
        options += ["-v", f"{bundle}:/src/storypost.bundle:ro"]
        ca = host_ca_bundle()
        if ca is not None:
            options += ["-v", f"{ca}:{CA_IN_CONTAINER}:ro"]
            for name in ("PIP_CERT", "SSL_CERT_FILE"):
                options += ["-e", f"{name}={CA_IN_CONTAINER}"]
        for name in PASSED_ENV:
            if os.environ.get(name):
                options += ["-e", f"{name}={os.environ[name]}"]
        run = [self.docker, "run", "-d", "--name", self.name, "--label", "storypost.newcomer=1"]
        subprocess.run(
            [*run, *options, BASE_IMAGE, "sleep", "infinity"],
            check=True,
            capture_output=True,
        )

    def sh(
        self,
        script: str,
        timeout: float = 120,
        env: Mapping[str, str] | None = None,
        detach: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """`bash -c script` in the container, as root in /root."""
        command = [self.docker, "exec", "-w", "/root"]
        for key, value in (env or {}).items():
            command += ["-e", f"{key}={value}"]
        if detach:
            command.append("-d")
        command += [self.name, "bash", "-c", script]
        return subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )

    def read_log(self, path: str, offset: int) -> bytes:
        """The bytes of a file in the container from `offset` on (none yet: empty)."""
        command = [self.docker, "exec", self.name, "bash", "-c", f"tail -c +{offset + 1} {path}"]
        return subprocess.run(command, capture_output=True, timeout=60, check=False).stdout

    def remove(self) -> None:
        for command in (["rm", "-f", self.name], ["network", "rm", self.network]):
            subprocess.run([self.docker, *command], capture_output=True, timeout=120, check=False)


def sweep_leftovers(docker: str) -> None:
    """Removes the containers and networks of earlier runs whose test process died (kill -9)."""
    listings = {
        ("container", "rm", "-f"): ["container", "ls", "-a", "--format", "{{.Names}}"],
        ("network", "rm"): ["network", "ls", "--format", "{{.Name}}"],  # no -f before Docker 23
    }
    for remove, listing in listings.items():
        names = subprocess.run(
            [docker, *listing, "--filter", "label=storypost.newcomer=1"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        for name in names:
            pid = re.fullmatch(r"storypost-newcomer-(\d+)(-net)?", name)
            if pid and not Path(f"/proc/{pid[1]}").exists():
                say(f"removing {remove[0]} {name} of a run that died")
                subprocess.run([docker, *remove, name], capture_output=True, check=False)


def host_ca_bundle() -> Path | None:
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("SSL_CERT_FILE"),
        "/etc/ssl/certs/ca-certificates.crt",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_bundle(scratch: Path) -> tuple[Path, str]:
    """A bundle of the committed HEAD (and its branch), plus STORYPOST_NEWCOMER_INCLUDE's paths."""
    source = ROOT
    include = os.environ.get("STORYPOST_NEWCOMER_INCLUDE", "").split()
    revision = os.environ.get("STORYPOST_NEWCOMER_REV", "")
    if include or revision:
        # A scratch clone takes them; the checkout itself is only read.
        source = scratch / "source"
        git("clone", "--quiet", str(ROOT), str(source), cwd=scratch)
        if revision:
            git("reset", "--quiet", "--hard", revision, cwd=source)
        for relative in include:
            target = source / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / relative).is_dir():
                shutil.copytree(ROOT / relative, target, dirs_exist_ok=True)
            else:
                shutil.copy2(ROOT / relative, target)
    if include:
        git("add", "-A", cwd=source)
        git(
            "-c", "user.name=newcomer test", "-c", "user.email=newcomer@invalid",
            "commit", "--quiet", "-m", "newcomer test: working-tree paths", cwd=source,
        )  # fmt: skip
        say(f"testing {revision or 'HEAD'} plus the working tree's {', '.join(include)}")
    branch = git("rev-parse", "--abbrev-ref", "HEAD", cwd=source)
    refs = ["HEAD"] if branch == "HEAD" else ["HEAD", branch]
    bundle = scratch / "storypost.bundle"
    git("bundle", "create", "--quiet", str(bundle), *refs, cwd=source)
    say(f"bundled {git('rev-parse', '--short', 'HEAD', cwd=source)} ({branch})")
    return bundle, branch


@pytest.fixture
def container(tmp_path: Path) -> Iterator[tuple[Container, str]]:
    docker = docker_cli()
    answer = subprocess.run(
        [docker, "version", "--format", "{{.Server.Version}}"], capture_output=True, check=False
    )
    assert answer.returncode == 0, "no Docker engine answers: run `make test-newcomer`"
    sweep_leftovers(docker)
    say(f"base image {BASE_IMAGE} (scripts/images/base-image.sh) ...")
    base_image = ROOT / "scripts/images/base-image.sh"
    subprocess.run([str(base_image)], env={**os.environ, "DOCKER": docker}, check=True)
    bundle, branch = make_bundle(tmp_path)
    box = Container(docker, f"storypost-newcomer-{os.getpid()}")
    try:
        box.start(bundle, ROOT / "deploy/k8s/components/render-seccomp/render-svc.json")
        say(f"container {box.name} of {BASE_IMAGE} started")
        yield box, branch
    finally:
        box.remove()
        say(f"container {box.name} and its network removed")


def step(box: Container, what: str, script: str, timeout: float = 600, **env: str) -> str:
    """Runs one step, asserts it succeeded, returns its output."""
    say(what)
    result = box.sh(script, timeout=timeout, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{what}: exit {result.returncode}\n{output[-4000:]}"
    return output


def follow_make_run(box: Container) -> re.Match[str]:
    """Prints `make run`'s output as it comes until its ready line; fails if it exits first."""
    offset, pending = 0, b""
    deadline = time.monotonic() + READY_WITHIN_S
    while time.monotonic() < deadline:
        chunk = box.read_log("/root/make-run.log", offset)
        offset += len(chunk)
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for raw in lines:
            # A progress line redrawn with \r (dpkg, pip): its last state.
            line = raw.rstrip(b"\r").rsplit(b"\r", 1)[-1].decode(errors="replace")
            print(f"    make run | {line}", flush=True)
            ready = READY.search(line)
            if ready:
                return ready
        if box.sh("test -e /root/make-run.rc").returncode == 0:
            tail = box.sh("tail -c 3000 /root/make-run.log; cat /root/make-run.rc").stdout
            pytest.fail(f"make run exited before its ready line:\n{tail}")
        time.sleep(3)
    pytest.fail(f"make run printed no ready line within {READY_WITHIN_S} s")


def processes(box: Container) -> list[str]:
    """Every process of the container but its init, its `sleep infinity` and the lister."""
    listing = box.sh(
        'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] && continue;'
        ' c=$(tr "\\0" " " <"$d/cmdline" 2>/dev/null) || continue;'
        ' [ "$c" = "sleep infinity " ] || [ -z "$c" ] || echo "$p $c"; done'
    )
    return [line for line in listing.stdout.splitlines() if line.strip()]


@pytest.mark.timeout(90 * 60)
def test_readme_two_commands_take_a_clone_to_a_published_story(
    container: tuple[Container, str],
) -> None:
    box, branch = container
    started = time.monotonic()
    assert box.sh("command -v python3 python3.13 pyenv uv || true").stdout == "", (
        "the base image must be stock: no Python, pyenv or uv"
    )
    # What a bare Debian lacks to follow the README at all: git to clone, make to run it.
    step(
        box,
        "apt-get install git make (the README's prerequisites) ...",
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq"
        " --no-install-recommends git make >/dev/null",
    )
    checkout = "" if branch == "HEAD" else f"-b {shlex.quote(branch)} "
    step(box, "git clone", f"git clone --quiet {checkout}/src/storypost.bundle {CLONE}")

    say("make run (installs what is missing, then starts the stack) ...")
    # Its own process group, as in a terminal: Ctrl-C there is SIGINT to that group.
    box.sh(
        f"cd {CLONE} && {{ setsid make run >/root/make-run.log 2>&1 & echo $! >/root/make-run.pid;"
        " wait $!; echo $? >/root/make-run.rc; }",
        detach=True,
    )
    ready = follow_make_run(box)
    base, token = ready["base"], ready["token"]
    org = ORG.search(base)
    assert org, f"the ready line's base URL names no organization: {base}"
    say(f"ready after {int(time.monotonic() - started)} s: {base}")

    venv = f"cd {CLONE} && .venv/bin/storypost"
    step(
        box,
        "storypost login",
        f'cd {CLONE} && echo "$TOKEN" | .venv/bin/storypost login --base-url "$BASE" --token-stdin',
        timeout=120,
        TOKEN=token,
        BASE=base,
    )
    step(
        box,
        "storypost sandbox connect",
        f"{venv} sandbox connect --org {org['org']} --platform photoapp --username alice",
        timeout=120,
    )
    box.sh(f"cat >{CLONE}/story.html <<'HTML'\n{STORY_HTML}HTML")
    story = step(
        box,
        "storypost story schedule --html story.html --account alice --wait ...",
        f"{venv} story schedule --html story.html --account alice --wait",
        timeout=600,
    )
    print("\n".join(f"    story | {line}" for line in story.strip().splitlines()), flush=True)
    assert re.search(r"^status\s+executed\s*$", story, re.MULTILINE), story

    say("Ctrl-C: SIGINT to make run's process group")
    stop = box.sh("kill -INT -- -$(cat /root/make-run.pid)")
    assert stop.returncode == 0, stop.stderr
    deadline = time.monotonic() + STOP_WITHIN_S
    while box.sh("test -e /root/make-run.rc").returncode != 0:
        assert time.monotonic() < deadline, f"make run still running {STOP_WITHIN_S} s after Ctrl-C"
        time.sleep(1)
    time.sleep(1)  # the wrapper that wrote the exit code ends too
    code = box.sh("cat /root/make-run.rc").stdout.strip()
    tail = box.sh("tail -n 15 /root/make-run.log").stdout
    print("\n".join(f"    make run | {line}" for line in tail.splitlines()), flush=True)
    say(f"make run ended (exit {code})")
    left = [p for p in processes(box) if LEFTOVER.search(p)]
    assert left == [], "still running after Ctrl-C:\n" + "\n".join(left)
    say(f"nothing left running; the newcomer's path took {int(time.monotonic() - started)} s")
