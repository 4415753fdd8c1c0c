#!/usr/bin/env bash
# make_fields.sh BUILD_DIR PHOTOS_DIR OUT_DIR [--count N] [--seed S]: segmentation masks and boxes over an
# ImageFolder of photos (the ImageNet-like set) in the three layouts conveyor reads: OUT_DIR/images +
# OUT_DIR/masks (segmentation folder), OUT_DIR/instances.json (COCO), OUT_DIR/shards (WebDataset). Quiet and
# instant when already made from the same photos with the same recipe.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
[ $# -ge 3 ] || { say "usage: $0 BUILD_DIR PHOTOS_DIR OUT_DIR [--count N] [--seed S]"; exit 2; }
build=$1 photos=$2 out=$3
shift 3
maker=$(tool "$build" fields/make_fields)
recipe="$("$maker" --recipe "$@"); photos $(cat "$(dirname "$photos")/.stamp" 2>/dev/null | cksum)"
stamp_matches "$out" "$recipe" && exit 0
mkdir -p "$(dirname "$out")"
staging=$(staging_dir "$out")
trap 'rm -rf "$staging"' EXIT
"$maker" --input "$photos" --out "$staging" "$@" >&2
publish "$staging" "$out" "$recipe"
say "fields: ready in $out"
