# mongoeco: a MongoDB wire-protocol server (mongoeco over SQLite) for machines where the
# upstream mongo image cannot be pulled; the same launcher `make run` uses. Not for production.
#   docker build -f deploy/docker/mongoeco.Dockerfile -t storypost/mongoeco:VERSION .
ARG BASE_IMAGE=debian:trixie-slim

FROM ${BASE_IMAGE} AS python
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 \
 && rm -rf /var/lib/apt/lists/*

FROM python AS venv
COPY build/wheels /wheels
RUN python3 -m venv --without-pip /opt/storypost \
 && /opt/storypost/bin/python "$(echo /wheels/pip-*.whl)/pip" install --no-cache-dir \
      --no-index --find-links /wheels --require-hashes \
      -r /wheels/requirements-mongoeco.txt

# storypost itself (pure Python), apart: a code change rebuilds only this small layer.
FROM python AS app
COPY build/wheels/pip-*.whl build/dist/storypost-*.whl /dist/
RUN python3 "$(echo /dist/pip-*.whl)/pip" install --no-cache-dir --no-index --no-deps \
      --no-compile --target /opt/app /dist/storypost-*.whl

FROM python
RUN useradd --system --uid 10001 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin storypost \
 && mkdir -p /data \
 && chown 10001:10001 /data
COPY --from=venv /opt/storypost /opt/storypost
COPY --from=app /opt/app /opt/storypost/lib/python3.13/site-packages
RUN python3 -m compileall -q -j 0 /opt/storypost/lib/python3.13/site-packages >/dev/null
COPY deploy/docker/healthcheck.py /usr/local/lib/storypost/healthcheck.py
# MONGO_PORT: the port the health check asks (set it too when CMD passes another --port).
ENV PATH=/opt/storypost/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MONGO_PORT=27017
USER 10001:10001
WORKDIR /data
EXPOSE 27017
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "/usr/local/lib/storypost/healthcheck.py", "mongo"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "storypost_cli.embedded_mongo"]
CMD ["--host", "0.0.0.0", "--port", "27017", "--path", "/data/mongo.sqlite"]
