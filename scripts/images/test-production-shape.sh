#!/usr/bin/env bash
# The production-shape run (through engine.sh): the images (layer cache), then the integration
# suite against two replicas of every service and of the edge behind a balancer, with
# STORYPOST_ENVIRONMENT=production and keys made for the run (docs/deploy.md). Its summary
# prints the requests each replica counted. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/images/build.sh
echo "production shape: pytest tests/integration with STORYPOST_TEST_STACK=production" >&2
export STORYPOST_TEST_STACK=production
exec .venv/bin/pytest -q tests/integration --ignore=tests/integration/test_stack.py "$@"
