#!/usr/bin/env bash
# shards_vs_files.sh: the same images read three ways by pipeline_throughput, side by side in one run, in
# alternating rounds: as a folder of loose JPEGs, as local tar shards (made here by make_shards), and as
# the same shards from an HTTP server on 127.0.0.1 (Python's http.server, sendfile). Issue 16 asks for
# shards >= files and http >= 0.9 x shards; the ratios of the medians are printed and written.
#
#   bench/pipeline/shards_vs_files.sh BIN_DIR IMAGE_FOLDER OUT_DIR [pipeline_throughput options...]
#
# BIN_DIR holds pipeline_throughput and make_shards. Options after OUT_DIR go to every run (default:
# --threads $(nproc) --batch 256 --size 224 --epochs 6 --seed 7); ROUNDS (default 3) sets the rounds and
# SHARD_MB (default 64) the shard size. Writes OUT_DIR/{files,shards,http}_<round>.json and
# OUT_DIR/summary.json; prints one line per run and the medians with their ratios.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
bin=$1 images=$2 out=$3
shift 3
options=("$@")
[ ${#options[@]} -gt 0 ] || options=(--threads "$(nproc)" --batch 256 --size 224 --epochs 6 --seed 7)
rounds=${ROUNDS:-3}
python=$(command -v python3)
mkdir -p "$out"
shards=$out/shards
if [ ! -f "$shards/shards.json" ]; then
  rm -rf "$shards"
  "$bin/make_shards" --input "$images" --output "$shards" --shard-size "${SHARD_MB:-64}" | tail -1
fi
count=$("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["shardlist"]))' "$shards/shards.json")
last=$(printf '%06d' $((count - 1)))

port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Python's threaded http.server, sending files with sendfile(2) so that the server is not what is measured.
"$python" - "$shards" "$port" >"$out/http_server.log" 2>&1 <<'PYTHON' &
import functools, http.server, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def copyfile(self, source, outputfile):
        outputfile.flush()
        self.connection.sendfile(source)
    def log_message(self, *args):
        pass
handler = functools.partial(Handler, directory=sys.argv[1])
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), handler).serve_forever()
PYTHON
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do  # until the server answers (at most 5 s)
  "$python" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
    "http://127.0.0.1:$port/shards.json" 2>/dev/null && break
  sleep 0.1
done

declare -A data=(
  [files]=$images
  [shards]="$shards/shard-{000000..$last}.tar"
  [http]="http://127.0.0.1:$port/shard-{000000..$last}.tar"
)
for round in $(seq "$rounds"); do
  for kind in files shards http; do
    json=$out/${kind}_$round.json
    "$bin/pipeline_throughput" --data "${data[$kind]}" "${options[@]}" --json "$json" >"$out/${kind}_$round.log" 2>&1 ||
      { echo "shards_vs_files: $kind round $round failed:"; tail -5 "$out/${kind}_$round.log"; exit 1; }
    printf '%-7s round %d: %s\n' "$kind" "$round" "$(head -1 "$out/${kind}_$round.log")"
  done
done

"$python" - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {k: [json.load(open(f"{out}/{k}_{r}.json")) for r in range(1, rounds + 1)] for k in ("files", "shards", "http")}
median = {k: statistics.median(run["images_per_s"] for run in v) for k, v in runs.items()}
summary = {
    "images_per_s_median": median,
    "images_per_s": {k: [run["images_per_s"] for run in v] for k, v in runs.items()},
    "shards_over_files": median["shards"] / median["files"],
    "http_over_shards": median["http"] / median["shards"],
    "skipped": {k: sum(run["skipped"] for run in v) for k, v in runs.items()},
    "images": {k: v[0]["images"] for k, v in runs.items()},
    "commit": runs["files"][0]["machine"]["commit"],
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print(f"median img/s: files {median['files']:.0f}, shards {median['shards']:.0f}, http {median['http']:.0f}")
print(f"shards / files {summary['shards_over_files']:.3f} (target >= 1.0), "
      f"http / shards {summary['http_over_shards']:.3f} (target >= 0.9)")
EOF
