#!/usr/bin/env bash
# launch.sh N COMMAND [ARG...] — runs N copies of COMMAND on this host, one per GPU, as torchrun does for a
# one-host job: each gets RANK and LOCAL_RANK (0..N-1), WORLD_SIZE and LOCAL_WORLD_SIZE (N), and the
# rendezvous address MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port unless MASTER_PORT is set). A copy that
# fails ends the others (SIGTERM to its process group, SIGKILL 10 s later), so no rank waits forever on a
# collective; the launcher exits with the first failure's status (128 + signal for a signal), or 0 when
# every copy succeeded. SIGINT and SIGTERM to the launcher go to every copy.
#
# NVLink multicast (NVLS) stays off in every copy, whatever the caller's environment says: on shared GPUs
# it can take a device out of service. NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
# NVSHMEM_DISABLE_NVLS=1 are always set.
#
#   scripts/launch.sh 2 build/examples/feed_vs_prefetch/feed_vs_prefetch --modes prefetch
set -uo pipefail

usage() { echo "usage: launch.sh N COMMAND [ARG...]   (N: processes, 1..64)" >&2; exit 2; }
[ $# -ge 2 ] || usage
n=$1; shift
[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || usage

free_port() {
  # The kernel's choice for a socket bound to port 0 on the loopback address.
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

export MASTER_ADDR=127.0.0.1
if [ -z "${MASTER_PORT:-}" ]; then
  MASTER_PORT=$(free_port) || { echo "launch: no free port (python3 needed, or set MASTER_PORT)" >&2; exit 2; }
fi
export MASTER_PORT WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# Each copy runs in a session (and so a process group) of its own, so ending a copy ends what it started
# too. A watcher subshell per copy reports "started RANK GROUP" and "ended RANK STATUS" on a FIFO, which
# this shell reads line by line: no polling, and no reliance on which children bash still remembers.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkfifo "$work/events"
exec 3<>"$work/events"

declare -A group_of=()  # rank -> process group of a copy still running
status=0
killer=""
stop_all() {  # stop_all: SIGTERM to every copy still running, SIGKILL to them 10 s later
  local group
  for group in "${group_of[@]}"; do kill -TERM -- "-$group" 2>/dev/null; done
  [ -z "$killer" ] || return 0
  setsid bash -c 'sleep 10; for group; do kill -KILL -- "-$group" 2>/dev/null; done' killer "${group_of[@]}" \
    3>&- </dev/null &
  killer=$!
}
trap 'echo "launch: stopping every rank" >&2; [ "$status" -ne 0 ] || status=130; stop_all' INT TERM

for ((rank = 0; rank < n; ++rank)); do
  (
    RANK=$rank LOCAL_RANK=$rank setsid "$@" 3>&- &
    echo "started $rank $!" >&3
    wait "$!"
    echo "ended $rank $?" >&3
  ) &
done

ended=0
while [ "$ended" -lt "$n" ]; do
  read -r -u 3 kind rank value || continue  # a trapped signal interrupted the read
  case $kind in
    started)
      group_of[$rank]=$value
      # A copy that starts after another failed is stopped at once.
      [ "$status" -eq 0 ] || kill -TERM -- "-$value" 2>/dev/null
      ;;
    ended)
      unset "group_of[$rank]"
      ended=$((ended + 1))
      if [ "$value" -ne 0 ] && [ "$status" -eq 0 ]; then
        status=$value
        echo "launch: rank $rank exited with status $value; stopping the other ${#group_of[@]}" >&2
        stop_all
      fi
      ;;
  esac
done
[ -z "$killer" ] || kill -- "-$killer" 2>/dev/null
exit "$status"
