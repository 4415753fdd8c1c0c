#!/usr/bin/env bash
# two_hosts.sh COMMAND [ARG...]: runs COMMAND with two "hosts" made for it: two network namespaces of this
# run's own, joined by a veth pair, with the project's own addresses (10.77.0.1 and 10.77.0.2 on
# 10.77.0.0/24, and each its loopback). Traffic stays between them: neither namespace has a route out.
# The namespaces and the pair are removed when COMMAND ends, however it ends. COMMAND runs in the caller's
# namespace with these variables, and its exit status is this script's:
#   CONVEYOR_HOST_A=10.77.0.1  CONVEYOR_HOST_B=10.77.0.2   the two hosts' addresses
#   CONVEYOR_NETNS_A, CONVEYOR_NETNS_B                     their namespaces' names (unique to this run)
#   CONVEYOR_ON_HOST=<this folder>/on_host.sh              on_host.sh ADDRESS COMMAND...: runs COMMAND on
#                                                          that host (also Open MPI's rsh agent: see there)
# Several runs may overlap (ctest -j): each has its own namespaces, and the same addresses never meet.
# Needs root and iproute2's `ip`. Without them it exits 77 (CTest's SKIP_RETURN_CODE in the tests that
# use it), unless CONVEYOR_REQUIRE_TWO_HOSTS=1 (CI) makes that a failure.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: two_hosts.sh COMMAND [ARG...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)

unavailable() {
  if [ "${CONVEYOR_REQUIRE_TWO_HOSTS:-0}" = 1 ]; then
    echo "two_hosts: $1 (CONVEYOR_REQUIRE_TWO_HOSTS=1: failing, not skipping)" >&2
    exit 1
  fi
  echo "two_hosts: $1: skipped" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || unavailable "needs root to make network namespaces"
command -v ip >/dev/null || unavailable "needs iproute2's ip"

# Names unique to this run: the namespaces by PID, the veth ends (15 characters at most) likewise.
tag=$$
ns_a=conveyor-$tag-a ns_b=conveyor-$tag-b
end_a=cv$tag-a end_b=cv$tag-b
cleanup() {
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true  # deleting a namespace deletes the veth end inside it, and its peer
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns_a" || unavailable "cannot make a network namespace"
ip netns add "$ns_b"
ip link add "$end_a" type veth peer name "$end_b"
ip link set "$end_a" netns "$ns_a"
ip link set "$end_b" netns "$ns_b"
ip -n "$ns_a" addr add 10.77.0.1/24 dev "$end_a"
ip -n "$ns_b" addr add 10.77.0.2/24 dev "$end_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$end_a" up
ip -n "$ns_b" link set "$end_b" up

export CONVEYOR_HOST_A=10.77.0.1 CONVEYOR_HOST_B=10.77.0.2
export CONVEYOR_NETNS_A=$ns_a CONVEYOR_NETNS_B=$ns_b
export CONVEYOR_ON_HOST=$here/on_host.sh
set +e
"$@"
status=$?
set -e
exit "$status"
