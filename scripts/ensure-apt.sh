#!/usr/bin/env bash
# Installs the Debian packages storypost needs, only those that are missing (fast when all are there).
set -euo pipefail
# chromium-headless-shell: render-svc's browser, as in its image; chromium: the app's end-to-end tests.
# prometheus: promtool tests the alert rules, and a real Prometheus scrapes the test stack.
packages=(chromium chromium-headless-shell ffmpeg nats-server fonts-noto-color-emoji fonts-dejavu
  prometheus)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
