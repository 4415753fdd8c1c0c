#!/usr/bin/env bash
# bench/gpu/run.sh "SCRIPT [ARGS...]"...: several bench/gpu scripts in one device call (each call costs a
# machine start), one after another, each word a script and its arguments:
#
#   bash bench/gpu/run.sh "pipeline_vs_peers --rounds 3" "feed_vs_step --variant 'nopool=--hardware-pool 0'"
#
# (a word is split as the shell splits a command line: quotes group, as in the variant above).
# Each script's results go to their own folder (its name); everything ends in $OUT/results.tgz, and the
# console of the whole call in $OUT/console.log. A script that fails (a test program failed, or a script
# could not run) makes the call exit 1 at the end, after the others have run. bench/gpu/README.md lists the
# scripts.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}
export BENCH_RESULTS=${BENCH_RESULTS:-/tmp/bench-results} BENCH_RUNNER=1
[ $# -gt 0 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
# Every script named must exist before the first one starts: a typo should not cost a machine's time.
for word in "$@"; do
  read -r script _ <<<"$word"
  [ -f "$here/${script%.sh}.sh" ] && [ "${script%.sh}" != lib ] && [ "${script%.sh}" != run ] ||
    { echo "run.sh: no script bench/gpu/${script%.sh}.sh" >&2; exit 2; }
done
rm -rf "$BENCH_RESULTS" && mkdir -p "$BENCH_RESULTS" "$out"
for word in "$@"; do
  read -r script arguments <<<"$word"
  options=()
  eval "options=($arguments)"  # the word's own options, split as the shell splits a command line
  bash "$here/${script%.sh}.sh" "${options[@]}"
  # Packed after every script, so that a call stopped at its time limit still brings back what ended.
  tar -C "$BENCH_RESULTS" -czf "$out/results.tgz.part" . && mv "$out/results.tgz.part" "$out/results.tgz"
done 2>&1 | tee "$out/console.log"
# Each script's record says how it ended; a script without one ended before it could write it.
python3 - "$BENCH_RESULTS" "$#" <<'VERDICT' | tee -a "$out/console.log"
import glob, json, sys
records = [json.load(open(path)) for path in sorted(glob.glob(f"{sys.argv[1]}/*/record.json"))]
bad = [r["command"] for r in records if r["status"]]
if len(records) < int(sys.argv[2]):
    bad.append(f"{int(sys.argv[2]) - len(records)} script(s) ended without a record")
print("run.sh: every script ended well" if not bad else "run.sh: failed: " + "; ".join(bad))
sys.exit(1 if bad else 0)
VERDICT
