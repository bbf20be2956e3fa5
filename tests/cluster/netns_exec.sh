#!/usr/bin/env bash
# Stands in for ssh when MPICH's Hydra launches its proxies on the hosts of
# netns_cluster.sh: `netns_exec.sh [ssh options] HOST COMMAND...` runs COMMAND
# (a shell command line, as ssh would) in HOST's network namespace, under the
# host's own name. CLUSTER_HOSTS_FILE lists "ADDRESS NAMESPACE NAME VETH".
set -euo pipefail
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done  # ssh options (-x)
host=$1
shift
read -r _ ns name _ < <(awk -v h="$host" '$1 == h' "$CLUSTER_HOSTS_FILE")
[ -n "${ns:-}" ] || { echo "netns_exec.sh: unknown host '$host'" >&2; exit 255; }
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$name" "$*"
