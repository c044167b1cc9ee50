#!/usr/bin/env bash
# Builds every image of deploy/docker with the engine at DOCKER_HOST (see engine.sh): the base
# image, the wheelhouse, then each Dockerfile as it is (the files production uses). Docker's
# layer cache skips whatever did not change. Usage: build.sh [IMAGE...] (default: all).
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=${PY:-.venv/bin/python}
DOCKER=${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || echo docker )}
export DOCKER
ALL=(edge account-svc render-svc publish-svc webhook-svc sandbox-net mongoeco nats seaweedfs)
IMAGES=("$@")
[ ${#IMAGES[@]} -gt 0 ] || IMAGES=("${ALL[@]}")
VERSION=$("$PY" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
LOGS=build/images
mkdir -p "$LOGS"

say() { echo "images: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

"$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1 \
  || fail "step 'engine': no Docker engine answers at ${DOCKER_HOST:-the default socket} (run through scripts/images/engine.sh run)"
scripts/images/base-image.sh || fail "step 'base image' (see above)"
"$PY" scripts/images/wheelhouse.py || fail "step 'wheelhouse' (see above)"

# BuildKit (incremental context, parallel stages) where the CLI has it built in (before 23)
# or has the buildx plugin; the legacy builder otherwise.
client=$("$DOCKER" version --format '{{.Client.Version}}' 2>/dev/null || echo 0)
if [ "${client%%.*}" -lt 23 ] 2>/dev/null || "$DOCKER" buildx version >/dev/null 2>&1; then
  export DOCKER_BUILDKIT=1
else
  export DOCKER_BUILDKIT=0
fi

for image in "${IMAGES[@]}"; do
  dockerfile=deploy/docker/$image.Dockerfile
  [ -f "$dockerfile" ] || fail "step 'build $image': no $dockerfile"
  started=$SECONDS
  # Host network: apt-get reaches the Debian mirror the way the host does.
  progress=()
  [ "$DOCKER_BUILDKIT" = 1 ] && progress=(--progress=plain)
  if ! "$DOCKER" build "${progress[@]}" --network host --label "org.opencontainers.image.version=$VERSION" \
      -f "$dockerfile" -t "storypost/$image:$VERSION" . >"$LOGS/$image.log" 2>&1; then
    fail "step 'build $image': docker build failed; last lines of $LOGS/$image.log:
$(tail -20 "$LOGS/$image.log")"
  fi
  cached=$(grep -cE 'Using cache|CACHED' "$LOGS/$image.log" || true)
  say "storypost/$image:$VERSION built in $((SECONDS - started)) s ($cached cached steps)"
done
# Images a rebuilt tag left behind, and build cache unused for a week (inputs that changed).
# The legacy builder keeps its cache in untagged images: there only week-old ones go.
if [ "$DOCKER_BUILDKIT" = 1 ]; then
  "$DOCKER" image prune -f >/dev/null 2>&1 || true
  "$DOCKER" builder prune -f --filter "until=168h" >/dev/null 2>&1 || true
else
  "$DOCKER" image prune -f --filter "until=168h" >/dev/null 2>&1 || true
fi
"$DOCKER" image ls --filter "reference=storypost/*:$VERSION" --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' >&2
