# storypost: `make run` starts the embedded stack, `make test` runs every check. Both install what is missing.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:/usr/sbin:/sbin:$(PATH)
PROTO_FILES := $(wildcard protos/storypost/*/v1/*.proto)
PYTEST_ARGS ?=

.PHONY: run test deps apt venv lock protos protos-check lint typecheck pytest bench clean-data \
	wheels images test-containers test-production-shape container-suite validate-deploy \
	reliability test-newcomer load node client-gen

# Node without the TypeScript SDK's build tools: the stack itself needs neither.
run: apt venv
	@STORYPOST_NODE_PACKAGES=0 scripts/ensure-node.sh
	$(VENV)/bin/storypost dev up

# Then the container suite, whenever a Docker engine answers or can be started (scripts/images).
test: deps protos-check lint typecheck pytest container-suite

deps: apt node venv

apt:
	@scripts/ensure-apt.sh

# Node.js (Debian's, where missing) and the TypeScript SDK's locked devDependencies (sdk-ts/).
node:
	@scripts/ensure-node.sh

venv: $(VENV)/.installed

# Python 3.13 comes from scripts/find-python.sh: on PATH, pyenv's, Debian's (apt) or uv's (README).
# requirements.lock: the exact version and hashes of every package the venv, CI and the images
# install (docs/dev-stack.md). Installed with its hashes checked, then storypost and its SDK as
# editable installs without dependencies, built by the locked hatchling (no index needed for
# that); last, pip checks offline that the installed set has all the pyproject files ask for (a
# requirement added without `make lock` fails here). The stamp is newer than the lock and both
# pyproject files: nothing to do otherwise.
LOCK := requirements.lock
$(VENV)/.installed: $(LOCK) pyproject.toml client/pyproject.toml
	@if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))'; then \
	  PYTHON=$$(scripts/find-python.sh); \
	  rm -rf $(VENV); echo "creating $(VENV) with $$PYTHON"; "$$PYTHON" -m venv $(VENV); \
	fi
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e '.[all,dev]' -e ./client
	@$(PY) -m pip install -q --dry-run --no-index --no-build-isolation -e '.[all,dev]' -e ./client \
	  || { echo "requirements.lock lacks what pyproject.toml asks for (above): run make lock" >&2; exit 1; }
	@touch $@

# Rewrites requirements.lock from pyproject.toml and client/pyproject.toml, every extra of both
# (uv, for Python 3.13 on any platform): every version the lock already pins is kept while it
# still satisfies them, only what changed is resolved anew.
# LOCK_ARGS=--upgrade takes the newest of everything, --upgrade-package NAME of one package.
LOCK_ARGS ?=
lock:
	@if [ ! -x $(VENV)/bin/uv ]; then \
	  if [ ! -x $(PY) ]; then PYTHON=$$(scripts/find-python.sh); "$$PYTHON" -m venv $(VENV); fi; \
	  $(PY) -m pip install -q uv; \
	fi
	$(VENV)/bin/uv pip compile --quiet --universal --python-version 3.13 --generate-hashes \
	  --custom-compile-command 'make lock' --output-file $(LOCK) $(LOCK_ARGS) \
	  pyproject.toml client/pyproject.toml --all-extras

protos: venv
	$(PY) scripts/protogen.py protos

client-gen: venv
	$(PY) scripts/gen_client.py
	$(PY) scripts/gen_ts_client.py

protos-check: venv
	$(PY) scripts/protogen.py protos --check

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy

# STORYPOST_REQUIRE_NODE: the TypeScript SDK's tests fail, rather than skip, without Node.
pytest: venv node
	STORYPOST_REQUIRE_NODE=1 $(VENV)/bin/pytest -q --durations=15 $(PYTEST_ARGS)

bench: deps
	$(PY) bench/edge_vs_bare.py
	$(PY) bench/webhooks.py --rate 500

# The whole reliability suite, the long tests included (docs/reliability.md), the long tests
# of other folders (marked reliability_long: the capacity counts, a calendar move published),
# then the newcomer test.
reliability: deps
	STORYPOST_RELIABILITY_LONG=1 $(VENV)/bin/pytest -q tests/reliability $(PYTEST_ARGS)
	$(VENV)/bin/pytest -q -m reliability_long tests/integration tests/e2e $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-newcomer PYTEST_ARGS=

# The README's two commands on a stock Debian 13 container (tests/newcomer/): a clone of the
# committed HEAD to a published sandbox story, then Ctrl-C; minutes. Not part of `make test`.
# The engine: DOCKER_HOST's, or a dockerd of our own that is stopped afterwards.
test-newcomer: venv
	STORYPOST_NEWCOMER_TEST=1 scripts/images/engine.sh run \
	  $(VENV)/bin/pytest -q -s tests/newcomer $(PYTEST_ARGS)

# Sustained load on the embedded stack: 100 organizations x 60 requests/min (LOAD_ARGS=--quick).
LOAD_ARGS ?=
load: deps
	$(PY) bench/load.py $(LOAD_ARGS)

clean-data:
	rm -rf .data

# --- container images and the container suite (docs/deploy.md, docs/testing.md) ----------
# STORYPOST_CONTAINER_TESTS: auto (default: when an engine answers or can be started), 1, 0.
STORYPOST_CONTAINER_TESTS ?= auto

wheels: venv
	$(PY) scripts/images/wheelhouse.py

# Every image of deploy/docker, with the engine at DOCKER_HOST or a dockerd of our own.
images: deps
	scripts/images/engine.sh run scripts/images/build.sh

# Integration tests against containers of our images (built first; cached layers reused): a
# smoke of every area, single replicas (scripts/images/test-containers.sh says which).
test-containers: deps
	STORYPOST_TEST_STACK=containers scripts/images/engine.sh run scripts/images/test-containers.sh $(PYTEST_ARGS)

# The same suite against the production shape: two replicas of every service and of the edge
# behind a balancer, STORYPOST_ENVIRONMENT=production with keys made for the run; the summary
# prints the requests each replica counted (docs/deploy.md).
test-production-shape: deps
	STORYPOST_TEST_STACK=production scripts/images/engine.sh run scripts/images/test-containers.sh $(PYTEST_ARGS)

container-suite: deps
	@case "$(STORYPOST_CONTAINER_TESTS)" in \
	  0|no|false) echo "container suite: off (STORYPOST_CONTAINER_TESTS=$(STORYPOST_CONTAINER_TESTS))";; \
	  1|yes|true) $(MAKE) --no-print-directory test-containers test-production-shape;; \
	  *) if scripts/images/engine.sh available; then \
	       $(MAKE) --no-print-directory test-containers test-production-shape; \
	     else echo "container suite: no Docker engine answers or can be started here; the same" \
	       "integration tests ran above against the embedded processes"; fi;; \
	esac

# Manifests (kustomize + Kubernetes schemas), compose file and Dockerfile lint; no engine needed.
validate-deploy: venv
	$(VENV)/bin/pytest -q tests/deploy
