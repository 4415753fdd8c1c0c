#!/usr/bin/env bash
# cpu_time_launcher.sh COMMAND...: runs one compile or link command, as CMake's compiler or linker launcher
# (CMAKE_CXX_COMPILER_LAUNCHER, CMAKE_CUDA_COMPILER_LAUNCHER, CMAKE_CXX_LINKER_LAUNCHER), and appends its
# CPU time to $CONVEYOR_CPU_TIME_LOG: "user sys wall output", seconds, one line per command. CPU time
# (user + sys) is what a build's cost is compared by on a machine that others build on too: their work
# stretches wall time, not the CPU time of our commands. scripts/build_cpu_times.py sums the log by target.
set -uo pipefail
log=${CONVEYOR_CPU_TIME_LOG:?set CONVEYOR_CPU_TIME_LOG to the file the times are appended to}
output=?
previous=
for arg in "$@"; do
  [ "$previous" = -o ] && output=$arg
  previous=$arg
done
times=$(mktemp)
/usr/bin/time -f '%U %S %e' -o "$times" "$@"
status=$?
# One short line per command, written at once (O_APPEND): two jobs' lines do not interleave.
printf '%s %s\n' "$(tail -n 1 "$times")" "$output" >>"$log"
rm -f "$times"
exit "$status"
