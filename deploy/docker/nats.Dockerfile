# nats: Debian's nats-server with JetStream, for machines where the upstream nats image cannot
# be pulled.   docker build -f deploy/docker/nats.Dockerfile -t storypost/nats:VERSION .
ARG BASE_IMAGE=debian:trixie-slim

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends nats-server \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /nonexistent --shell /usr/sbin/nologin storypost \
 && mkdir -p /data \
 && chown 10001:10001 /data
# NATS_MONITOR_PORT: the port the health check asks (set it too when CMD passes another -m).
ENV NATS_MONITOR_PORT=8222
USER 10001:10001
EXPOSE 4222 8222
# No curl here: bash asks the monitoring port, 200 once JetStream is up.
HEALTHCHECK --interval=5s --timeout=5s --start-period=20s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${NATS_MONITOR_PORT} && printf 'GET /healthz?js-enabled-only=true HTTP/1.0\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
# nats-server exits 0 on SIGINT (1 on SIGTERM), after the same clean shutdown.
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/sbin/nats-server"]
CMD ["-js", "-sd", "/data", "-p", "4222", "-m", "8222"]
