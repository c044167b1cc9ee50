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
# What each pass runs (make test must stay under 35 minutes on the 2-core machine; the process
# pass before it runs the whole integration suite, so these run what the images and the shape
# change, not the services' own decisions again):
# - production (two replicas of everything behind a balancer, production keys): replica kills
#   and rolling restarts, service auth with production keys, the NATS consumers shared by
#   replicas, identical schedules racing over replicas, deliveries once across webhook-svc
#   replicas, rate buckets shared by account-svc replicas, the SDK and CLI flows and the edge's
#   HTTP through the balancer, and a real Prometheus scraping every replica with the prod
#   overlay's rules (killing publish-svc raises PublishDown within its `for:`);
# - containers (one replica of each in development mode, what a testcontainers user starts):
#   each image's health check and metrics, a service killed and started again, and the SDK's
#   flows through them (the production pass runs the same images through the same
#   ContainerStack; the whole suite on single containers is
#   `STORYPOST_TEST_STACK=containers .venv/bin/pytest tests/integration`).
case "$STORYPOST_TEST_STACK" in
  production)
    selection=(tests/integration/deploy tests/integration/test_service_auth.py
               tests/integration/test_nats_replicas.py tests/integration/publish/test_stories.py
               tests/integration/webhooks/test_delivery.py
               tests/integration/accounts/test_rate_buckets.py
               tests/integration/accounts/test_connect_links.py
               tests/integration/client/test_sdk_flows.py tests/integration/client/test_cli.py
               tests/integration/render/test_drafts.py tests/integration/test_edge_http.py
               tests/integration/test_prometheus_alerts.py) ;;
  containers)
    selection=(tests/integration/deploy/test_components.py
               tests/integration/client/test_sdk_flows.py) ;;
esac
echo "container suite: STORYPOST_TEST_STACK=$STORYPOST_TEST_STACK pytest ${selection[*]}" >&2
exec .venv/bin/pytest -q "${selection[@]}" --durations=15 "$@"
