#!/usr/bin/env bash
# install.sh PREFIX: installs the S3 test server pinned here (package.json, package-lock.json: npm ci) and
# its launcher serve.js into PREFIX, once per lock file (PREFIX/installed-lock.json records it), under a
# file lock so that concurrent callers install it once. The C++ tests install it the same way
# (tests/support/s3_server.cpp). Exits 3 when npm fails (no registry), 4 without node or npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: install.sh PREFIX" >&2; exit 2; }
prefix=$1
command -v npm >/dev/null && command -v node >/dev/null || { echo "install.sh: node or npm is missing" >&2; exit 4; }
mkdir -p "$prefix"
(
  flock 9
  if ! cmp -s "$here/package-lock.json" "$prefix/installed-lock.json" 2>/dev/null; then
    cp "$here/package.json" "$here/package-lock.json" "$prefix/"
    (cd "$prefix" && npm ci --no-audit --no-fund --engine-strict=false --fetch-retries=1 --loglevel=error) >&2 || exit 3
    cp "$here/package-lock.json" "$prefix/installed-lock.json"
  fi
  cp "$here/serve.js" "$prefix/"
) 9>"$prefix/.install.lock"
