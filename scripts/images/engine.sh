#!/usr/bin/env bash
# A Docker engine for storypost's images and container tests: the one at DOCKER_HOST when it
# answers, else our own dockerd (private socket, data root outside the checkout, loopback ports).
#
#   engine.sh run CMD...   runs CMD with DOCKER_HOST set; stops the dockerd it started (by pid)
#                          when CMD ends, fails or is interrupted
#   engine.sh available    exit 0 when an engine answers or can be started here, else 1 (quiet)
#
# Settings: STORYPOST_DOCKER_ROOT (data root, default /var/lib/storypost-docker: the layer cache
# outlives fresh clones), STORYPOST_DOCKER_RUN (socket, pidfile, exec root; default
# /run/storypost-docker), STORYPOST_ENGINE_START_SECONDS (default 60).
set -euo pipefail

DATA_ROOT=${STORYPOST_DOCKER_ROOT:-/var/lib/storypost-docker}
RUN_DIR=${STORYPOST_DOCKER_RUN:-/run/storypost-docker}
SOCKET="$RUN_DIR/docker.sock"
PIDFILE="$RUN_DIR/dockerd.pid"
LOG="$DATA_ROOT/dockerd.log"
START_SECONDS=${STORYPOST_ENGINE_START_SECONDS:-60}
LOCK=/run/lock/storypost-docker.lock

say() { echo "engine: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

docker_cli() {
  # Debian's docker.io CLI matches its daemon; any other docker CLI works too.
  if [ -x /usr/bin/docker ]; then echo /usr/bin/docker; else command -v docker || true; fi
}

answers() {  # answers HOST: the engine at HOST replies to a ping within 5 s
  local cli
  cli=$(docker_cli)
  [ -n "$cli" ] && DOCKER_HOST="$1" timeout 5 "$cli" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

find_dockerd() { command -v dockerd || { [ -x /usr/sbin/dockerd ] && echo /usr/sbin/dockerd; } || true; }

install_engine() {
  [ "$(id -u)" -eq 0 ] || fail "step 'install docker.io': dockerd is missing and we are not root"
  command -v apt-get >/dev/null || fail "step 'install docker.io': dockerd is missing and there is no apt-get"
  say "installing Debian's docker.io (dockerd) ..."
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends docker.io iptables >/dev/null; } 2>"$RUN_DIR/apt.err"; then
    fail "step 'install docker.io': apt-get failed: $(tail -3 "$RUN_DIR/apt.err")"
  fi
}

available() {
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then return 0; fi
  answers "unix://$SOCKET" && return 0
  [ "$(id -u)" -eq 0 ] || return 1
  [ -n "$(find_dockerd)" ] && return 0
  command -v apt-get >/dev/null && apt-cache show docker.io >/dev/null 2>&1
}

STARTED_PID=""
stop_ours() {
  [ -n "$STARTED_PID" ] || return 0
  local pid=$STARTED_PID
  STARTED_PID=""
  say "stopping dockerd (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || return 0
  # dockerd stops its containers (10 s grace each, in parallel) before it exits.
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  say "dockerd (pid $pid) did not stop in 30 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

start_ours() {
  mkdir -p "$DATA_ROOT" "$RUN_DIR"
  [ -n "$(find_dockerd)" ] || install_engine
  local dockerd
  dockerd=$(find_dockerd)
  [ -n "$dockerd" ] || fail "step 'find dockerd': not found after installing docker.io"
  # A dockerd of ours left by a killed run: stop it first (its pid is in our pidfile only).
  if [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    STARTED_PID=$(cat "$PIDFILE"); stop_ours
  fi
  rm -f "$PIDFILE" "$SOCKET"
  say "starting dockerd (data root $DATA_ROOT, socket $SOCKET, log $LOG)"
  # --ip 127.0.0.1: published ports bind loopback only; --bridge none: no default bridge,
  # containers join only the networks a run creates.
  setsid "$dockerd" \
    --data-root "$DATA_ROOT" --exec-root "$RUN_DIR/exec" --pidfile "$PIDFILE" \
    -H "unix://$SOCKET" --ip 127.0.0.1 --bridge none \
    --log-level warn >>"$LOG" 2>&1 </dev/null 9>&- &
  STARTED_PID=$!
  local waited=0
  until answers "unix://$SOCKET"; do
    if ! kill -0 "$STARTED_PID" 2>/dev/null; then
      STARTED_PID=""
      fail "step 'start dockerd': it exited at once; last lines of $LOG:
$(tail -15 "$LOG")"
    fi
    waited=$((waited + 1))
    if [ "$waited" -ge $((START_SECONDS * 5)) ]; then
      stop_ours
      fail "step 'start dockerd': no answer on $SOCKET within ${START_SECONDS} s; last lines of $LOG:
$(tail -15 "$LOG")"
    fi
    sleep 0.2
  done
  say "dockerd ready (pid $STARTED_PID) in $((waited / 5)) s"
}

run() {
  [ $# -gt 0 ] || fail "usage: engine.sh run CMD..."
  if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then
    say "using the engine at DOCKER_HOST=$DOCKER_HOST"
    exec "$@"
  fi
  mkdir -p "$(dirname "$LOCK")" "$RUN_DIR"
  # One container run at a time on this machine: a second one waits for the first.
  exec 9>"$LOCK"
  if ! flock -n 9; then
    say "another storypost container run holds $LOCK; waiting for it (30 min at most) ..."
    flock -w 1800 9 || fail "step 'lock': $LOCK still held after 30 min"
  fi
  trap 'stop_ours' EXIT
  start_ours
  export DOCKER_HOST="unix://$SOCKET"
  local code=0
  # In the background (so signals reach this shell while it waits), with SIGINT restored:
  # bash would have it ignored. Ctrl-C reaches CMD too (same process group): it cleans up,
  # then the engine stops. A SIGTERM for this script is passed on to CMD.
  env --default-signal=INT "$@" &
  local child=$!
  trap 'say "interrupted; waiting for the command to clean up"' INT
  trap 'say "terminated; passing it on"; kill -TERM "$child" 2>/dev/null || true' TERM
  while true; do
    wait "$child" && code=0 || code=$?
    # wait returns >128 when a trapped signal arrived; the child may still be running.
    kill -0 "$child" 2>/dev/null || break
  done
  return "$code"
}

case "${1:-}" in
  run) shift; run "$@" ;;
  available) available ;;
  *) fail "usage: engine.sh run CMD... | engine.sh available" ;;
esac
