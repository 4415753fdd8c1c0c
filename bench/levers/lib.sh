# shellcheck shell=bash
# What the lever scripts of bench/levers/ share (sourced, not run): runs under a time limit whose failures
# are listed and do not stop the script, the alternating order of rounds, and how many passes over a folder
# make a run long enough that start-up is small (issue 41: at least 100,000 images or 10 s a side).
# Each script takes the bundle's bin folder, the data folder (an ImageFolder of JPEGs) and an output folder.

# shellcheck disable=SC2034  # used by the scripts that source this file
levers_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# limited SECONDS LOG COMMAND...: COMMAND with stdout and stderr in LOG, stopped (TERM, KILL 10 s later) at
# SECONDS. A nonzero status is appended with the command to $levers_failed (a file, when set) and returned.
limited() {
  local seconds=$1 log=$2
  shift 2
  timeout -k 10 "$seconds" "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "!!! rc=$rc ($(basename "$log")): $*" >&2
    [ -z "${levers_failed:-}" ] || echo "$rc $*" >>"$levers_failed"
  fi
  return $rc
}

# in_order ROUND NAME...: the names as given in odd rounds, reversed in even ones (A B C, C B A, ...), so that
# a drift of the machine over the call weighs on every variant alike.
in_order() {
  local round=$1
  shift
  if [ $((round % 2)) -eq 1 ]; then
    printf '%s\n' "$@"
  else
    printf '%s\n' "$@" | tac
  fi
}

# epochs_for IMAGES MIN: the passes over IMAGES files that give at least MIN images (at least one).
epochs_for() {
  local images=$1 min=$2
  [ "$images" -gt 0 ] || { echo 1; return; }
  local epochs=$(((min + images - 1) / images))
  [ "$epochs" -ge 1 ] || epochs=1
  echo "$epochs"
}

# jpeg_count DIR: the JPEG files under DIR.
jpeg_count() {
  find "$1" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) | wc -l
}

# need BIN NAME...: fails (status 2, saying which) unless every program NAME is in BIN.
need() {
  local bin=$1 name missing=()
  shift
  for name in "$@"; do [ -x "$bin/$name" ] || missing+=("$name"); done
  [ ${#missing[@]} -eq 0 ] || { echo "missing in $bin: ${missing[*]}" >&2; return 2; }
}
