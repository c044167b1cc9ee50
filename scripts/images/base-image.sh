#!/usr/bin/env bash
# Makes sure the engine at DOCKER_HOST has the pinned base image (debian:trixie-slim): already
# there, else pulled, else built here with debootstrap (minbase, slimmed like the official
# image) and `docker import`. The rootfs tarball is cached outside the checkout.
set -euo pipefail

BASE=${STORYPOST_BASE_IMAGE:-debian:trixie-slim}
SUITE=trixie
MIRROR=${STORYPOST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${STORYPOST_IMAGE_CACHE:-/var/cache/storypost-images}
TARBALL="$CACHE/$SUITE-slim-rootfs.tar"
DOCKER=${DOCKER:-docker}

say() { echo "base-image: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

if "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then
  exit 0
fi
mkdir -p "$CACHE"
say "trying to pull $BASE ..."
if timeout 60 "$DOCKER" pull -q "$BASE" >/dev/null 2>"$CACHE/pull.err"; then
  say "pulled $BASE"; exit 0
fi
say "no registry answers ($(tail -1 "$CACHE/pull.err" 2>/dev/null | cut -c1-160)); building $BASE here"

if [ ! -s "$TARBALL" ]; then
  command -v debootstrap >/dev/null || {
    [ "$(id -u)" -eq 0 ] || fail "step 'install debootstrap': not installed and we are not root"
    say "installing debootstrap ..."
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends debootstrap >/dev/null; } \
      || fail "step 'install debootstrap': apt-get failed"
  }
  root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  say "debootstrap --variant=minbase $SUITE from $MIRROR (about 30-60 s) ..."
  if ! debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
    fail "step 'debootstrap': see $CACHE/debootstrap.log:
$(tail -5 "$CACHE/debootstrap.log")"
  fi
  # What the official slim image does: no docs, man pages or locales from later installs,
  # no apt caches, deb822 sources with the security and updates suites.
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<CFG
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
CFG
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
    "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/var/log/apt/* \
    "$root"/tmp/* "$root"/root/.cache
  : >"$root/etc/hostname"
  tar --numeric-owner -C "$root" -cf "$TARBALL.tmp" . || fail "step 'tar rootfs'"
  mv "$TARBALL.tmp" "$TARBALL"
  rm -rf "$root"
  trap - EXIT
  say "cached the rootfs in $TARBALL ($(du -h "$TARBALL" | cut -f1))"
fi

say "docker import $TARBALL as $BASE ..."
"$DOCKER" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' \
  --message "debootstrap --variant=minbase $SUITE (storypost scripts/images/base-image.sh)" \
  "$TARBALL" "$BASE" >/dev/null || fail "step 'docker import': could not import $TARBALL"
say "imported $BASE"
