#!/usr/bin/env bash
# shards_vs_files.sh: the same images read four ways by pipeline_throughput, side by side in one run, in
# rounds whose order alternates: as a folder of loose JPEGs (files), as local tar shards (made here by
# make_shards) through their index (shards), the same local shards as a brace pattern (pattern: counted
# when opened), and the same shards from an HTTP server on 127.0.0.1 through the index there (http;
# Python's http.server, sendfile, a process per connection). Issue 16 asks for shards >= files and
# http >= 0.9 x shards; each round's ratios and their medians are printed and written.
#
#   bench/pipeline/shards_vs_files.sh BIN_DIR IMAGE_FOLDER OUT_DIR [pipeline_throughput options...]
#
# BIN_DIR holds pipeline_throughput and make_shards. Options after OUT_DIR go to every run (default:
# --threads $(nproc) --batch 256 --size 224 --epochs 6 --seed 7); ROUNDS (default 3) sets the rounds and
# SHARD_MB (default 64) the shard size, HTTP_SERVER=threads a threaded server instead of a process per
# connection, HTTP_NICE=N runs the server at that nice value (a negative one needs root: a server with
# cores of its own, as a real one has), KINDS a subset of "files shards pattern http" and the variants
# files-buffered, files-nice0, shards-nice0 and random (the local shards read at random,
# --shard-random-access 1: located once, each image one pread(), the whole-epoch shuffle) (below). Writes
# OUT_DIR/<kind>_<round>.json and OUT_DIR/summary.json (with the server's CPU time per image sent); prints
# one line per run, then the medians of the runs and of the rounds' ratios.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
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
# Python's http.server, sending files with sendfile(2) and serving each connection in a process of its own
# (ForkingMixIn), so that the server is not what is measured: with threads, the transfers of the shards
# read at once would take turns at one interpreter lock (HTTP_SERVER=threads: that server instead).
HTTP_SERVER=${HTTP_SERVER:-processes}
nice_server=()
[ -z "${HTTP_NICE:-}" ] || nice_server=(nice -n "$HTTP_NICE")
"${nice_server[@]}" "$python" - "$shards" "$port" "$HTTP_SERVER" >"$out/http_server.log" 2>&1 <<'PYTHON' &
import functools, http.server, socketserver, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def copyfile(self, source, outputfile):
        outputfile.flush()
        self.connection.sendfile(source)
    def log_message(self, *args):
        pass
handler = functools.partial(Handler, directory=sys.argv[1])
# socketserver listens with a backlog of 5: more connections at once than that (the shard readers open up
# to 2 x parallel_shards) lose their SYNs, and each waits a second for the retransmission. A real server's
# backlog is in the hundreds (nginx: 511).
class ForkingHTTPServer(socketserver.ForkingMixIn, http.server.HTTPServer):
    request_queue_size = 128
class ThreadingHTTPServer(http.server.ThreadingHTTPServer):
    request_queue_size = 128
server = ForkingHTTPServer if sys.argv[3] == "processes" else ThreadingHTTPServer
server(("127.0.0.1", int(sys.argv[2])), handler).serve_forever()
PYTHON
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do  # until the server answers (at most 5 s)
  "$python" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
    "http://127.0.0.1:$port/shards.json" 2>/dev/null && break
  sleep 0.1
done

# Through the index, URLs have their counts too: several shards are read at once and interleaved
# (without counts a URL pattern is read one shard after another).
declare -A data=(
  [files]=$images
  [shards]="$shards/shards.json"
  [pattern]="$shards/shard-{000000..$last}.tar"
  [http]="http://127.0.0.1:$port/shards.json"
)
# Variants for telling causes apart: files through the shards' shuffle buffer of 1,000 samples (files-buffered),
# and files and shards with the pipeline's threads at nice 0 (files-nice0, shards-nice0), the shard readers'
# own value.
data[files-buffered]=$images data[files-nice0]=$images data[shards-nice0]=$shards/shards.json
data[random]=$shards/shards.json
declare -A kind_options=([files-buffered]="--shuffle-buffer 1000"
                         [files-nice0]="--worker-nice 0" [shards-nice0]="--worker-nice 0"
                         [random]="--shard-random-access 1")
read -r -a kinds <<<"${KINDS:-files shards pattern http}"
# Odd rounds run the kinds in the order given, even rounds in the reverse order: a machine whose speed drifts
# within a round (it does, by up to 1.5x from run to run) then favours no kind, and each ratio still compares
# runs that follow one another.
for round in $(seq "$rounds"); do
  order=("${kinds[@]}")
  if [ $((round % 2)) -eq 0 ]; then
    order=()
    for ((k = ${#kinds[@]} - 1; k >= 0; k--)); do order+=("${kinds[$k]}"); done
  fi
  for kind in "${order[@]}"; do
    json=$out/${kind}_$round.json
    read -r -a own <<<"${kind_options[$kind]:-}"
    "$bin/pipeline_throughput" --data "${data[$kind]}" "${options[@]}" "${own[@]}" --json "$json" \
      >"$out/${kind}_$round.log" 2>&1 ||
      { echo "shards_vs_files: $kind round $round failed:"; tail -5 "$out/${kind}_$round.log"; exit 1; }
    printf '%-7s round %d: %s\n' "$kind" "$round" "$(head -1 "$out/${kind}_$round.log")"
  done
done
# The server's CPU time so far (its own, and that of the connections' processes it has reaped), in seconds.
server_cpu=$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15 + $16 + $17) / hz}' "/proc/$server/stat")

HTTP_SERVER=$HTTP_SERVER HTTP_NICE=${HTTP_NICE:-} SERVER_CPU=$server_cpu "$python" - "$out" "$rounds" "${kinds[@]}" <<'EOF'
import json, os, statistics, sys
out, rounds, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {k: [json.load(open(f"{out}/{k}_{r}.json")) for r in range(1, rounds + 1)] for k in kinds}
rate = {k: [run["images_per_s"] for run in v] for k, v in runs.items()}
median = {k: statistics.median(v) for k, v in rate.items()}
# Each round's ratio (its runs follow one another), and the median of those.
pairs = {"shards_over_files": ("shards", "files"), "pattern_over_files": ("pattern", "files"),
         "files_buffered_over_files": ("files-buffered", "files"),
         "shards_over_files_buffered": ("shards", "files-buffered"),
         "shards_nice0_over_files_nice0": ("shards-nice0", "files-nice0"),
         "http_over_shards": ("http", "shards"), "random_over_files": ("random", "files")}
per_round = {name: [a / b for a, b in zip(rate[x], rate[y])] for name, (x, y) in pairs.items()
             if x in rate and y in rate}
# Where the time went, per image (medians over the rounds): the process's CPU (every thread), and each
# stage's busy time (wall time inside the stage, summed over the workers).
cpu = {k: statistics.median(run["cpu"]["us_per_image"] for run in v) for k, v in runs.items()
       if all("cpu" in run for run in v)}
stages = {k: {s["name"]: statistics.median(run_s["busy_s"] * 1e6 / run["images"]
                                            for run in v for run_s in run["stages"] if run_s["name"] == s["name"])
              for s in v[0]["stages"] if s["count"]}
          for k, v in runs.items()}
summary = {
    "images_per_s_median": median,
    "cpu_us_per_image_median": cpu,
    "stage_us_per_image_median": stages,
    "images_per_s": rate,
    "per_round": per_round,
    **{name: statistics.median(v) for name, v in per_round.items()},
    "targets": {"shards_over_files": 1.0, "random_over_files": 1.0, "http_over_shards": 0.9},
    "skipped": {k: sum(run["skipped"] for run in v) for k, v in runs.items()},
    "images": {k: v[0]["images"] for k, v in runs.items()},
    "checksums": {k: sorted({run["checksum"] for run in v}) for k, v in runs.items()},
    "commit": runs[kinds[0]][0]["machine"]["commit"],
    "deterministic": runs[kinds[0]][0]["config"]["deterministic"],
    "http_server": "python http.server, sendfile, " + ("a process" if os.environ["HTTP_SERVER"] == "processes"
                                                        else "a thread") + " per connection" +
                   (", nice " + os.environ["HTTP_NICE"] if os.environ["HTTP_NICE"] else ""),
}
if "http" in runs:
    sent = sum(run["images"] for run in runs["http"])
    summary["http_server_cpu_s"] = float(os.environ["SERVER_CPU"])
    summary["http_server_cpu_us_per_image"] = 1e6 * summary["http_server_cpu_s"] / sent if sent else None
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print("median img/s: " + ", ".join(f"{k} {median[k]:.0f}" for k in kinds))
if cpu:
    print("median CPU us per image (all threads): " + ", ".join(f"{k} {cpu[k]:.0f}" for k in kinds if k in cpu))
for k in kinds:
    print(f"median stage us per image, {k}: " + ", ".join(f"{n} {t:.1f}" for n, t in stages[k].items()))
for name, values in per_round.items():
    print(f"{name}: median {summary[name]:.3f} of rounds " + ", ".join(f"{v:.3f}" for v in values))
if "http_server_cpu_us_per_image" in summary:
    print(f"HTTP server CPU: {summary['http_server_cpu_s']:.2f} s, "
          f"{summary['http_server_cpu_us_per_image']:.1f} us per image sent")
print("targets: shards_over_files >= 1.0 (random_over_files too), http_over_shards >= 0.9")
EOF
