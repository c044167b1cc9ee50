#!/usr/bin/env bash
# The container suite (run through engine.sh): builds the images (layer cache: only what
# changed), then runs integration tests against containers of them (which ones: below).
# Extra arguments go to pytest. test_stack.py tests the process supervisor itself and ran
# in the process pass. STORYPOST_TEST_STACK=production runs against the production shape
# (two replicas of every service and of the edge, production keys; docs/deploy.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/images/build.sh
export STORYPOST_TEST_STACK="${STORYPOST_TEST_STACK:-containers}"
case "$STORYPOST_TEST_STACK" in containers|production) ;; *)
  echo "STORYPOST_TEST_STACK=$STORYPOST_TEST_STACK: expected containers or production" >&2; exit 2;;
esac
# What each pass runs (make test must stay under 35 minutes on the 2-core machine):
# - production: the whole integration suite against the production shape, except
#   publish-svc's failure matrix and lost-answer kills, which test publish-svc's own
#   decisions (the process pass runs them; replica kills run here in
#   test_production_shape and test_components);
# - containers (one replica of each, what a testcontainers user starts): the same images
#   as the production pass, so a smoke of every area through them: start, SDK and CLI,
#   publishing, rendering, webhooks, accounts, the edge.
case "$STORYPOST_TEST_STACK" in
  production)
    selection=(tests/integration --ignore=tests/integration/test_stack.py
               --ignore=tests/integration/publish/test_failure_matrix.py
               --ignore=tests/integration/publish/test_lost_answers.py) ;;
  containers)
    selection=(tests/integration/deploy tests/integration/client tests/integration/accounts
               tests/integration/publish/test_stories.py tests/integration/render/test_drafts.py
               tests/integration/webhooks/test_delivery.py tests/integration/test_edge_http.py) ;;
esac
echo "container suite: STORYPOST_TEST_STACK=$STORYPOST_TEST_STACK pytest ${selection[*]}" >&2
exec .venv/bin/pytest -q "${selection[@]}" --durations=15 "$@"
