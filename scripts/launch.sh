#!/usr/bin/env bash
# launch.sh N COMMAND [ARG...] — runs N copies of COMMAND on this host: one per GPU, or N CPU processes
# training data-parallel. Two ways, chosen by CONVEYOR_LAUNCHER (mpirun or processes; by default mpirun
# where Open MPI's mpirun is on the PATH, processes elsewhere, as on a GPU machine without MPI):
#
#   mpirun     exec mpirun -np N COMMAND: each copy gets Open MPI's variables (OMPI_COMM_WORLD_RANK, ...);
#              NCCL's id travels by MPI_Bcast, the CPU's collectives by MPI. Processes are not bound to
#              cores (--bind-to none: each pipeline places its own threads), --oversubscribe lets N exceed
#              the cores, and root may run it (--allow-run-as-root). mpirun ends every copy when one fails
#              and names it ("mpirun noticed that process rank 1 ... exited on signal 9").
#   processes  N copies started here, as torchrun does for one host: each gets RANK and LOCAL_RANK (0..N-1),
#              WORLD_SIZE and LOCAL_WORLD_SIZE (N), MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free port unless
#              MASTER_PORT is set), from which NCCL bootstraps itself (NCCL_COMM_ID). GPUs only: the CPU's
#              collectives need MPI. A copy that fails ends the others (SIGTERM to its process group,
#              SIGKILL 10 s later); the launcher exits with the first failure's status (128 + signal for a
#              signal), or 0 when every copy succeeded. SIGINT and SIGTERM to the launcher go to every copy.
#
# CONVEYOR_GPU_EACH=1 (processes only) gives each copy its own GPU, as Slurm's --gpus-per-task=1 does: copy R
# sees only the R-th GPU of the caller's CUDA_VISIBLE_DEVICES (GPU R where it is unset), and trains on it as
# its only GPU (conveyor::resolve_rank_gpu).
#
# NVLink multicast (NVLS) stays off in every copy, whatever the caller's environment says: on shared GPUs
# it can take a device out of service. NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
# NVSHMEM_DISABLE_NVLS=1 are always set.
#
#   scripts/launch.sh 2 build/examples/custom_network/custom_network --device cpu
#   CONVEYOR_LAUNCHER=processes scripts/launch.sh 2 build/examples/quickstart/quickstart photos/
set -uo pipefail

usage() { echo "usage: launch.sh N COMMAND [ARG...]   (N: processes, 1..64)" >&2; exit 2; }
[ $# -ge 2 ] || usage
n=$1; shift
[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || usage

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

launcher=${CONVEYOR_LAUNCHER:-}
if [ -z "$launcher" ]; then
  if command -v mpirun >/dev/null; then launcher=mpirun; else launcher=processes; fi
fi
case $launcher in
  mpirun)
    [ "${CONVEYOR_GPU_EACH:-0}" = 0 ] ||
      { echo "launch: CONVEYOR_GPU_EACH=1 needs CONVEYOR_LAUNCHER=processes (mpirun gives every copy one environment)" >&2; exit 2; }
    command -v mpirun >/dev/null || { echo "launch: CONVEYOR_LAUNCHER=mpirun, but no mpirun on the PATH" >&2; exit 2; }
    root=()
    [ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
    exec mpirun "${root[@]}" -np "$n" --bind-to none --oversubscribe \
      -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS "$@" ;;
  processes) ;;
  *) echo "launch: CONVEYOR_LAUNCHER='$launcher' is neither mpirun nor processes" >&2; exit 2 ;;
esac

free_port() {
  # The kernel's choice for a socket bound to port 0 on the loopback address.
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

export MASTER_ADDR=127.0.0.1
if [ -z "${MASTER_PORT:-}" ]; then
  MASTER_PORT=$(free_port) || { echo "launch: no free port (python3 needed, or set MASTER_PORT)" >&2; exit 2; }
fi
export MASTER_PORT WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n
gpus=()
if [ "${CONVEYOR_GPU_EACH:-0}" = 1 ]; then
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then IFS=, read -r -a gpus <<<"$CUDA_VISIBLE_DEVICES"; fi
  [ ${#gpus[@]} -eq 0 ] || [ ${#gpus[@]} -ge "$n" ] ||
    { echo "launch: CONVEYOR_GPU_EACH=1 for $n copies, but CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' names ${#gpus[@]} GPUs" >&2; exit 2; }
fi

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
    [ "${CONVEYOR_GPU_EACH:-0}" != 1 ] || export CUDA_VISIBLE_DEVICES=${gpus[$rank]:-$rank}
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
