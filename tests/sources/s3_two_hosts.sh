#!/usr/bin/env bash
# Shards served by one host and read by another (issue 39): run under tests/support/two_hosts.sh, the S3
# test server (tests/support/s3server) listens on host A, and s3_cache_reader on host B lists
# s3://bkt/train/ there and reads every sample through a shard cache of its own, twice: the first run
# fetches all four shards across the veth pair, the second reads them from the cache.
#   two_hosts.sh s3_two_hosts.sh READER SERVER_PREFIX SERVER_SOURCE
# READER: the s3_cache_reader program; SERVER_PREFIX: where the server is installed (the build folder's
# tests/s3server); SERVER_SOURCE: its package.json, package-lock.json and serve.js. Exits 77 (skipped)
# when the server cannot be installed (no npm, no registry), unless CONVEYOR_REQUIRE_S3=1.
set -euo pipefail
reader=$1 prefix=$2 source=$3
say() { printf 's3_two_hosts: %s\n' "$*" >&2; }
unavailable() {
  if [ "${CONVEYOR_REQUIRE_S3:-0}" = 1 ]; then say "$1 (CONVEYOR_REQUIRE_S3=1: failing)"; exit 1; fi
  say "$1: skipped"
  exit 77
}

# The server, installed as the C++ tests install it.
"$source/install.sh" "$prefix" || unavailable "the S3 test server cannot be installed (install.sh exited $?)"

work=$(mktemp -d)
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Four shards of ten samples; sample n's image is n as 8 little-endian bytes (what s3_cache_reader sums).
python3 - "$work/up" <<'PY'
import io, os, struct, sys, tarfile
folder = sys.argv[1]
os.makedirs(folder)
for s in range(4):
    with tarfile.open(os.path.join(folder, f"shard-{s:06d}.tar"), "w", format=tarfile.PAX_FORMAT) as tar:
        for n in range(10 * s, 10 * s + 10):
            for ext, data in (("jpg", struct.pack("<Q", n)), ("cls", str(n % 10).encode())):
                info = tarfile.TarInfo(f"{n:05d}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
PY

# The server on host A (its own namespace); its PID is this one's too (only the network is apart).
"$CONVEYOR_ON_HOST" "$CONVEYOR_HOST_A" \
  "node --openssl-legacy-provider '$prefix/serve.js' --directory '$work/server' --address $CONVEYOR_HOST_A \
   --bucket bkt --upload '$work/up' --into bkt/train/ >'$work/server.log' 2>&1 & echo \$! >'$work/server.pid'"
server_pid=$(cat "$work/server.pid")
for _ in $(seq 300); do
  grep -q '^listening ' "$work/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; say "the server ended"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/server.log")
[ -n "$port" ] || { cat "$work/server.log" >&2; say "the server did not start"; exit 1; }
say "server on $CONVEYOR_HOST_A:$port; reader on $CONVEYOR_HOST_B"

read_on_b() {
  "$CONVEYOR_ON_HOST" "$CONVEYOR_HOST_B" \
    "AWS_ENDPOINT_URL=http://$CONVEYOR_HOST_A:$port AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER \
     AWS_REGION=us-east-1 '$reader' s3://bkt/train/ '$work/cache'"
}
first=$(read_on_b)
second=$(read_on_b)
say "first: $first"
say "second: $second"
# 40 samples, each once (0 + 1 + ... + 39 = 780); fetched the first time, from the cache the second.
case "$first" in "samples 40 sum 780 hits 0 misses 4 uncached 0") ;; *) say "first read: $first"; exit 1 ;; esac
case "$second" in "samples 40 sum 780 hits 4 misses 0 uncached 0") ;; *) say "second read: $second"; exit 1 ;; esac
say "ok"
