#!/usr/bin/env bash
# Prints the path of a Python 3.13 interpreter that can make a venv; the one place that decides
# where storypost's Python comes from (the Makefile's venv recipe and `make lock` call it).
# Messages go to stderr, the path alone to stdout. In this order:
#   1. python3.13 on PATH (not our own .venv's), 2. pyenv's ($PYENV_ROOT or ~/.pyenv),
#   3. the one uv put here on an earlier run (build/bootstrap/python),
#   4. Debian's python3.13 where apt has it (Debian 13): apt-get install python3.13 python3.13-venv,
#   5. `uv python install 3.13` with the uv version requirements.lock pins (Debian 12,
#      Ubuntu 24.04): that uv in a venv of the system's python3 under build/bootstrap/, the
#      Python under build/bootstrap/python; nothing outside the checkout changes (but Debian's
#      python3.X-venv, where python3 cannot make a venv).
# When none works: one line saying what to install, exit 1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BOOT="$ROOT/build/bootstrap"
UV_PYTHONS="$BOOT/python"
LOCK="$ROOT/requirements.lock"

say() { echo "find-python: $*" >&2; }
give_up() {  # give_up REASON: the one line a newcomer reads
  echo "storypost needs Python 3.13 and could not get one ($1); install python3.13 and" \
    "python3.13-venv (Debian 13: apt-get install python3.13 python3.13-venv), or uv" \
    "(uv python install 3.13), or pyenv (pyenv install 3.13), then run make again" >&2
  exit 1
}
# usable PYTHON: it is 3.13 and can make a venv with pip (Debian ships ensurepip apart, in
# python3.13-venv: without it `python3.13 -m venv` fails halfway).
usable() {
  [ -x "$1" ] && "$1" -c 'import sys, ensurepip, venv; sys.exit(sys.version_info[:2] != (3, 13))' \
    >/dev/null 2>&1
}
found() { echo "$1"; exit 0; }
shopt -s nullglob  # a glob that matches nothing expands to nothing
first_usable() {  # first_usable PATH...: the newest usable one (by version), if any
  local candidate
  while IFS= read -r candidate; do
    if usable "$candidate"; then found "$candidate"; fi
  done < <([ $# -eq 0 ] || printf '%s\n' "$@" | sort -V -r)
}
as_root() {  # as_root CMD...: root runs it, others through sudo when there is one
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

# 1. python3.13 on PATH; our .venv's bin (first on the Makefile's PATH) does not count.
path_without_venv=$(tr ':' '\n' <<<"$PATH" | { grep -v -x -F "$ROOT/.venv/bin" || true; } | paste -s -d: -)
on_path() { PATH=$path_without_venv command -v python3.13 || true; }
candidate=$(on_path)
if [ -n "$candidate" ] && usable "$candidate"; then found "$candidate"; fi

# 2. pyenv's newest 3.13, 3. the newest uv put here earlier.
first_usable "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13
first_usable "$UV_PYTHONS"/cpython-3.13*/bin/python3.13

# 4. Debian's own, where the release has it (an apt candidate for python3.13-venv). A fresh
# container has no package lists yet: without them apt knows no candidate.
if command -v apt-get >/dev/null && ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  as_root apt-get update -qq >&2 || true
fi
# (Read whole first: `apt-cache | grep -q` would fail on SIGPIPE under pipefail.)
policy=$( { command -v apt-cache >/dev/null && apt-cache policy python3.13-venv 2>/dev/null; } || true)
if grep -q 'Candidate: [0-9]' <<<"$policy"; then
  say "no Python 3.13 found; installing Debian's: apt-get install python3.13 python3.13-venv"
  if as_root apt-get install -y -qq --no-install-recommends python3.13 python3.13-venv >&2; then
    candidate=$(on_path)
    if [ -n "$candidate" ] && usable "$candidate"; then found "$candidate"; fi
  fi
  say "apt-get could not install python3.13 (not root, or no network?); trying uv"
fi

# 5. uv at the version requirements.lock pins: on PATH if it is that one, else installed from
# the lock's entry (hashes checked) into a venv of the system's python3.
uv_version=$(sed -n 's/^uv==\([^ ]*\).*/\1/p' "$LOCK")
[ -n "$uv_version" ] || give_up "requirements.lock names no uv version"
uv=$(command -v uv || true)
if [ -z "$uv" ] || [ "$("$uv" --version 2>/dev/null | cut -d' ' -f2)" != "$uv_version" ]; then
  uv="$BOOT/uv/bin/uv"
  if [ ! -x "$uv" ]; then
    say "no Python 3.13 found; installing uv $uv_version (requirements.lock) into $BOOT/uv"
    command -v python3 >/dev/null || give_up "no python3 here to install uv with"
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
      # Debian and Ubuntu ship venv's pip apart.
      py3=$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
      say "python3 cannot make a venv; installing Debian's $py3-venv"
      as_root apt-get install -y -qq --no-install-recommends "$py3-venv" >&2 \
        || give_up "python3 cannot make a venv and apt-get could not install $py3-venv"
    fi
    mkdir -p "$BOOT"
    # The lock's uv entry: its line and the hash lines that continue it.
    sed -n '/^uv==/,/^[^ ]/{/^uv==/p;/^ /p}' "$LOCK" | grep -v '^ *#' >"$BOOT/uv-requirement.txt"
    rm -rf "$BOOT/uv"
    { python3 -m venv "$BOOT/uv" >&2 \
      && "$BOOT/uv/bin/python" -m pip install -q --require-hashes -r "$BOOT/uv-requirement.txt" >&2; } \
      || { rm -rf "$BOOT/uv"; give_up "could not install uv $uv_version from PyPI, no network?"; }
  fi
fi
say "getting Python 3.13 with uv $uv_version: uv python install 3.13 into $UV_PYTHONS"
# --install-dir, --no-bin and the cache: everything stays under build/bootstrap.
UV_CACHE_DIR="$BOOT/uv-cache" "$uv" python install --install-dir "$UV_PYTHONS" --no-bin 3.13 >&2 \
  || give_up "uv python install 3.13 failed, no network?"
first_usable "$UV_PYTHONS"/cpython-3.13*/bin/python3.13
give_up "uv python install 3.13 left no usable python3.13 in $UV_PYTHONS"
