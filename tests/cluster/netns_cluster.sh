# Hosts that are really separate as far as MPI and pgstrategy can tell, on one
# machine: each host is a network namespace with its own host name and one
# link (a veth pair) into a shared bridge, optionally rate-limited. Sourced:
#
#   source netns_cluster.sh
#   cluster_up HOSTS [RATE]   # RATE for tc's tbf on each host link, both ways
#                             # ("1gbit", "250mbit"); returns 77 with the
#                             # reason in $cluster_skip when namespaces cannot
#                             # be made here
#   cluster_mpiexec PPN PROGRAM ARGS...
#                             # PPN: ranks per host, "2" or a list "2,1"
#   cluster_link_bytes        # bytes the hosts have sent over their links
#   cluster_down              # also run by the EXIT trap that cluster_up sets
#
# CLUSTER_MPIEXEC names MPICH's mpiexec (default mpiexec.hydra).
#
# Launching: MPICH's Hydra runs in the machine's own namespace and starts one
# proxy per host through its ssh launcher, with netns_exec.sh in place of ssh:
# it enters the host's namespace under a host name of its own (unshare --uts).
# Hydra makes each host a node; the proxies reach mpiexec over the bridge.
#
# UCX is told to use TCP on the host's link (UCX_TLS, UCX_NET_DEVICES): left to
# itself it reaches the other "hosts" through shared memory (they share one
# kernel) and almost nothing crosses the links.

cluster_hosts=()    # host addresses, which mpiexec is given as host names
cluster_skip=""
cluster_dir=""
cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cluster_up() {
  local count=$1 rate=${2:-} bin i
  if [ "$(id -u)" -ne 0 ]; then
    cluster_skip="creating network namespaces needs root"
    return 77
  fi
  for bin in ip tc unshare "${CLUSTER_MPIEXEC:-mpiexec.hydra}"; do
    command -v "$bin" >/dev/null ||
      { cluster_skip="$bin not found (Debian: iproute2, util-linux, mpich)"; return 77; }
  done
  # Names and addresses of this run only: a second run, or what a killed run
  # left, never collides. Interface names stay under 16 characters.
  local tag=$(($$ % 4096))
  cluster_dir=$(mktemp -d /tmp/pgs-cluster.XXXXXX)
  cluster_bridge=pgsbr$tag
  cluster_net=10.$((128 + tag / 256)).$((tag % 256))
  trap cluster_down EXIT
  if ! ip link add "$cluster_bridge" type bridge 2>"$cluster_dir/err"; then
    cluster_skip="cannot create a bridge: $(cat "$cluster_dir/err")"
    cluster_bridge=""
    return 77
  fi
  ip addr add "$cluster_net.254/24" dev "$cluster_bridge"
  ip link set "$cluster_bridge" up
  for ((i = 0; i < count; ++i)); do
    local ns=pgs$tag-h$i veth=pgs${tag}v$i addr=$cluster_net.$((i + 1))
    if ! ip netns add "$ns" 2>"$cluster_dir/err"; then
      cluster_skip="cannot create network namespace $ns: $(cat "$cluster_dir/err")"
      return 77
    fi
    echo "$addr $ns host$i $veth" >>"$cluster_dir/hosts"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$cluster_bridge" up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [ -n "$rate" ]; then
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
      tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 100ms
    fi
    cluster_hosts+=("$addr")
  done
}

cluster_down() {
  local addr ns name veth
  if [ -n "$cluster_dir" ] && [ -f "$cluster_dir/hosts" ]; then
    while read -r addr ns name veth; do
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
      ip link del "$veth" 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    done <"$cluster_dir/hosts"
  fi
  [ -n "${cluster_bridge:-}" ] && ip link del "$cluster_bridge" 2>/dev/null
  [ -n "$cluster_dir" ] && rm -rf "$cluster_dir"
  cluster_dir="" cluster_bridge="" cluster_hosts=()
  return 0
}

cluster_mpiexec() {
  local ppn=$1 hosts="" i
  shift
  IFS=, read -r -a counts <<<"$ppn"
  for ((i = 0; i < ${#cluster_hosts[@]}; ++i)); do
    local n=${counts[$i]:-${counts[-1]}}
    [ "$n" -gt 0 ] && hosts+="${hosts:+,}${cluster_hosts[$i]}:$n"
  done
  CLUSTER_HOSTS_FILE=$cluster_dir/hosts UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 \
    "${CLUSTER_MPIEXEC:-mpiexec.hydra}" -launcher ssh -launcher-exec "$cluster_here/netns_exec.sh" \
    -iface "$cluster_bridge" -hosts "$hosts" "$@"
}

# Bytes the hosts have sent over their links (the bridge side of each veth
# receives them).
cluster_link_bytes() {
  local addr ns name veth total=0 b
  while read -r addr ns name veth; do
    b=$(cat "/sys/class/net/$veth/statistics/rx_bytes")
    total=$((total + b))
  done <"$cluster_dir/hosts"
  echo "$total"
}
