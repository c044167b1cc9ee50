#!/usr/bin/env bash
# Node.js for the TypeScript SDK (sdk-ts/) and the OpenAPI generator test: Debian's nodejs and npm
# where `node` is missing (Debian 12 ships Node 18, the oldest the SDK supports), then the SDK's
# locked devDependencies (`npm ci`: typescript, openapi-typescript) when sdk-ts/node_modules is
# not the lock's. Fast when both are there. Only the npm registry is reached, and only by `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "ensure-node: Node $(node --version) is older than 18, which the TypeScript SDK needs" >&2
  exit 1
fi
# `make run` needs Node only where a caller runs the TypeScript SDK; the SDK's build and test
# tools are for `make test` (STORYPOST_NODE_PACKAGES=0 leaves them out).
[ "${STORYPOST_NODE_PACKAGES:-1}" = "0" ] && exit 0
# npm ci writes node_modules/.package-lock.json: newer than the lock means installed from it.
stamp=sdk-ts/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ sdk-ts/package-lock.json -nt "$stamp" ]; then
  (cd sdk-ts && npm ci --no-audit --no-fund --loglevel=error)
fi
