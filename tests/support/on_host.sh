#!/bin/sh
# on_host.sh ADDRESS COMMAND...: runs COMMAND on one of the hosts two_hosts.sh made (in its namespace),
# ADDRESS being CONVEYOR_HOST_A or CONVEYOR_HOST_B. The command line is joined and run by sh, as ssh runs
# a remote command: so this is also Open MPI's rsh agent for the two hosts (mpirun ... --mca plm_rsh_agent
# "$CONVEYOR_ON_HOST"), which starts its daemon on the second host this way.
set -eu
[ $# -ge 2 ] || { echo "usage: on_host.sh ADDRESS COMMAND..." >&2; exit 2; }
address=$1
shift
case "$address" in
  "${CONVEYOR_HOST_A:?run under two_hosts.sh}") ns=$CONVEYOR_NETNS_A ;;
  "${CONVEYOR_HOST_B:?run under two_hosts.sh}") ns=$CONVEYOR_NETNS_B ;;
  *) echo "on_host: '$address' is neither $CONVEYOR_HOST_A nor $CONVEYOR_HOST_B" >&2; exit 2 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
