#!/usr/bin/env bash
# The container suite (run through engine.sh): builds the images (layer cache: only what
# changed), then runs the integration suite against containers of them. Extra arguments go
# to pytest. test_stack.py tests the process supervisor itself and ran in the process pass.
# STORYPOST_TEST_STACK=production runs the same suite against the production shape (two
# replicas of every service and of the edge, production keys; docs/deploy.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/images/build.sh
export STORYPOST_TEST_STACK="${STORYPOST_TEST_STACK:-containers}"
case "$STORYPOST_TEST_STACK" in containers|production) ;; *)
  echo "STORYPOST_TEST_STACK=$STORYPOST_TEST_STACK: expected containers or production" >&2; exit 2;;
esac
# The single-replica pass leaves out publish-svc's failure matrix and lost-answer kills
# (about four minutes): they test publish-svc's own logic, which ran in the process pass,
# and their kills of containers run again in the production shape, two replicas each.
only_in_production=()
if [ "$STORYPOST_TEST_STACK" = containers ]; then
  only_in_production=(--ignore=tests/integration/publish/test_failure_matrix.py
                      --ignore=tests/integration/publish/test_lost_answers.py)
fi
echo "container suite: pytest tests/integration with STORYPOST_TEST_STACK=$STORYPOST_TEST_STACK" \
  "${only_in_production[*]}" >&2
exec .venv/bin/pytest -q tests/integration --ignore=tests/integration/test_stack.py \
  "${only_in_production[@]}" --durations=15 "$@"
