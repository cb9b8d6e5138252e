#!/usr/bin/env bash
# Builds the driftless agent image without pulling anything: compiles a static
# binary here, stages it with the host's CA bundle, and runs docker build on
# the staged context. Usage: scripts/build-image.sh [TAG] (default driftless:dev)
set -euo pipefail
tag="${1:-driftless:dev}"
root="$(cd "$(dirname "$0")/.." && pwd)"
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
echo "==> building static binary"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/driftless" ./cmd/driftless)
ca=/etc/ssl/certs/ca-certificates.crt
if [[ ! -f $ca ]]; then
  echo "error: $ca not found: install your distribution's ca-certificates package" >&2
  exit 1
fi
cp "$ca" "$ctx/ca-certificates.crt"
cp "$root/Dockerfile" "$ctx/Dockerfile"
echo "==> docker build -t $tag"
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$ctx"
echo "==> built $tag"
