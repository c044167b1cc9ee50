# render-svc: Chromium (Playwright) rendering, ffmpeg, temp blobs, drafts and previews.
# Build from the repository root after `make wheels` (build/wheels + build/dist):
#   docker build -f deploy/docker/render-svc.Dockerfile -t storypost/render-svc:VERSION .
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
      -r /wheels/requirements-render-svc.txt
# botocore carries the API models of every AWS service (25 MB); storypost speaks S3 only.
# Playwright's driver runs on Debian's Node.js (PLAYWRIGHT_NODEJS_PATH, below) instead of the
# 144 MB Node.js its wheel bundles.
RUN find /opt/storypost/lib/python3.13/site-packages/botocore/data -mindepth 1 -maxdepth 1 \
      -type d ! -name s3 -exec rm -rf {} + \
 && rm /opt/storypost/lib/python3.13/site-packages/playwright/driver/node

# storypost itself (pure Python), apart: a code change rebuilds only this small layer.
FROM python AS app
COPY build/wheels/pip-*.whl build/dist/storypost-*.whl /dist/
RUN python3 "$(echo /dist/pip-*.whl)/pip" install --no-cache-dir --no-index --no-deps \
      --no-compile --target /opt/app /dist/storypost-*.whl

FROM python
# Debian's Chromium headless shell (what Playwright itself runs for headless pages; 100 MB
# smaller than the full browser), ffmpeg/ffprobe, fonts, and tini (the container's init, below).
# No GPU drivers: Mesa's (LLVM, gallium: about 190 MB) are only dlopened when a GPU device
# exists; headless Chromium renders with SwiftShader. The Vulkan validation layer is a debug aid.
RUN printf 'path-exclude %s\n' \
      '/usr/lib/x86_64-linux-gnu/libLLVM*' '/usr/lib/x86_64-linux-gnu/libgallium*' \
      '/usr/lib/x86_64-linux-gnu/libz3.so*' '/usr/lib/x86_64-linux-gnu/dri/*' \
      '/usr/lib/chromium/libVkLayer_khronos_validation.so' \
      >/etc/dpkg/dpkg.cfg.d/storypost-headless \
 && apt-get update \
 && apt-get install -y --no-install-recommends chromium-headless-shell ffmpeg fonts-dejavu-core fonts-noto-color-emoji nodejs tini \
 && rm -rf /var/lib/apt/lists/*
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
    STORYPOST_GRPC_HOST=0.0.0.0 \
    STORYPOST_GRPC_PORT=50052 \
    HOME=/tmp \
    PLAYWRIGHT_NODEJS_PATH=/usr/bin/node
USER 10001:10001
EXPOSE 50052 9100
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "/usr/local/lib/storypost/healthcheck.py", "grpc"]
# SIGTERM: not serving first, in-flight calls finish, exit 0 (see docs/deploy.md).
STOPSIGNAL SIGTERM
# tini is PID 1: it reaps the processes Chromium and ffmpeg leave orphaned (a crashed
# renderer's children are re-parented to PID 1, and python would leave them zombies), and
# passes SIGTERM on to render-svc, whose exit status it returns. -s: also a subreaper when an
# engine's own init (docker run --init) is PID 1 instead.
ENTRYPOINT ["/usr/bin/tini", "-s", "--"]
CMD ["python", "-m", "render_svc"]
