#!/usr/bin/env bash
# The container suite (run through engine.sh): builds the images (layer cache: only what
# changed), then runs the integration suite against containers of them. Extra arguments go
# to pytest. test_stack.py tests the process supervisor itself and ran in the process pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/images/build.sh
echo "container suite: pytest tests/integration with STORYPOST_TEST_STACK=containers" >&2
export STORYPOST_TEST_STACK=containers
exec .venv/bin/pytest -q tests/integration --ignore=tests/integration/test_stack.py "$@"
