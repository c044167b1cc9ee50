#!/usr/bin/env bash
# Writes the S3 identity from S3_ACCESS_KEY/S3_SECRET_KEY, then runs `weed server` with S3.
# Arguments are added to weed's (e.g. other ports); WEED_IP is the address weed announces,
# WEED_BIND the one it listens on.
set -euo pipefail
: "${S3_ACCESS_KEY:?set S3_ACCESS_KEY}" "${S3_SECRET_KEY:?set S3_SECRET_KEY}"
config=/data/s3-identities.json
umask 077
printf '{"identities":[{"name":"storypost","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}\n' \
  "$S3_ACCESS_KEY" "$S3_SECRET_KEY" >"$config"
mkdir -p /data/master
exec /usr/local/bin/weed server -dir=/data -master.dir=/data/master \
  -ip="${WEED_IP:-127.0.0.1}" -ip.bind="${WEED_BIND:-0.0.0.0}" \
  -master.electionTimeout=1s -master.telemetry=false \
  -master.volumeSizeLimitMB=64 -volume.max=0 -volume.preStopSeconds=0 \
  -filer -s3 -s3.config="$config" -s3.port.iceberg=0 -s3.port.lance=0 "$@"
