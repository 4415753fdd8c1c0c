#!/usr/bin/env bash
# make_fashion_mnist.sh BUILD_DIR OUT_ROOT: Fashion-MNIST as JPEGs in OUT_ROOT/fashion-mnist
# ({train,test}/<class>/<index>.jpg and {train,test}.txt). Reads the IDX files that Debian's
# dataset-fashion-mnist ships, or CONVEYOR_FASHION_MNIST_DIR. Quiet and instant when already made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
[ $# -eq 2 ] || { say "usage: $0 BUILD_DIR OUT_ROOT"; exit 2; }
build=$1
out=$2/fashion-mnist
src=${CONVEYOR_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
for f in "${files[@]}"; do
  [ -f "$src/$f" ] || {
    say "missing $src/$f: install Debian's dataset-fashion-mnist or set CONVEYOR_FASHION_MNIST_DIR"
    exit 1
  }
done
maker=$(tool "$build" fashion_mnist/make_fashion_mnist)
recipe="$("$maker" --recipe); quality 95; sources $(cd "$src" && stat -L -c '%n:%s:%Y' "${files[@]}" | tr '\n' ' ')"
stamp_matches "$out" "$recipe" && exit 0

mkdir -p "$2"
staging=$(staging_dir "$out")
idx=$(mktemp -d)
trap 'rm -rf "$staging" "$idx"' EXIT
for f in "${files[@]}"; do gzip -dc "$src/$f" >"$idx/${f%.gz}"; done
"$maker" --idx "$idx" --out "$staging" --quality 95
publish "$staging" "$out" "$recipe"
say "fashion-mnist: ready in $out"
