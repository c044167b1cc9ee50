# edge: the HTTP edge (Falcon on cheroot): auth, rate limit, validation, JSON to gRPC.
# Build from the repository root after `make wheels` (build/wheels + build/dist):
#   docker build -f deploy/docker/edge.Dockerfile -t storypost/edge:VERSION .
# Pin the base by digest in production: --build-arg BASE_IMAGE=debian:trixie-slim@sha256:…
ARG BASE_IMAGE=debian:trixie-slim

# Debian's CPython 3.13: the interpreter every stage shares (no compiler, no pip at run time).
FROM ${BASE_IMAGE} AS python
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/*

# The virtual environment, from the host-built wheelhouse only (no index, no network): the
# wheels of requirements.lock, each checked against the lock's hashes.
FROM python AS venv
COPY build/wheels /wheels
RUN python3 -m venv --without-pip /opt/storypost \
 && /opt/storypost/bin/python "$(echo /wheels/pip-*.whl)/pip" install --no-cache-dir \
      --no-index --find-links /wheels --require-hashes \
      -r /wheels/requirements-edge.txt

# storypost itself (pure Python), apart: a code change rebuilds only this small layer.
FROM python AS app
COPY build/wheels/pip-*.whl build/dist/storypost-*.whl /dist/
RUN python3 "$(echo /dist/pip-*.whl)/pip" install --no-cache-dir --no-index --no-deps \
      --no-compile --target /opt/app /dist/storypost-*.whl

FROM python
RUN useradd --system --uid 10001 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin storypost
COPY --from=venv /opt/storypost /opt/storypost
COPY --from=app /opt/app /opt/storypost/lib/python3.13/site-packages
RUN python3 -m compileall -q -j 0 /opt/storypost/lib/python3.13/site-packages >/dev/null
COPY deploy/docker/healthcheck.py /usr/local/lib/storypost/healthcheck.py
ENV PATH=/opt/storypost/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    STORYPOST_METRICS_HOST=0.0.0.0 \
    STORYPOST_METRICS_PORT=9100 \
    STORYPOST_EDGE_HOST=0.0.0.0 \
    STORYPOST_EDGE_PORT=8080
USER 10001:10001
EXPOSE 8080 9100
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "/usr/local/lib/storypost/healthcheck.py", "edge"]
# SIGTERM: not serving first, in-flight calls finish, exit 0 (see docs/deploy.md).
STOPSIGNAL SIGTERM
CMD ["python", "-m", "edge"]
