#!/usr/bin/env bash
# make containers: build the three services' images (deployments/Containerfile.runtime
# around binaries built here) and run the spine test through them as containers
# (e2e/containers), with podman and the runc runtime. Installs podman and runc from
# Debian's packages when they are missing (as root). On this machine kind podman
# needs two settings: no default ulimits (containers.conf, named by CONTAINERS_CONF)
# and --runtime runc (crun, podman's default, fails on the cgroups here).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  echo "installing podman and runc for the container test..."
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >/dev/null; }
fi
conf=$(mktemp -d)
trap 'rm -rf "$conf"' EXIT
printf '[containers]\ndefault_ulimits = []\n' > "$conf/containers.conf"
export CONTAINERS_CONF="$conf/containers.conf"
TOCK_CONTAINERS=1 go test -count=1 -v -timeout 10m ./e2e/containers/ "$@"
