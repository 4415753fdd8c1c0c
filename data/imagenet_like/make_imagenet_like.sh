#!/usr/bin/env bash
# make_imagenet_like.sh BUILD_DIR OUT_DIR [--count N] [--seed S] [--sources FOLDER]...
# An ImageNet-like set (OUT_DIR/train/<class>/<i>.jpg, OUT_DIR/train.txt) cut from JPEG photos. Sources,
# first found: --sources folders; CONVEYOR_PHOTO_SOURCES (folders separated by ':'); the photos Debian's
# opencv-doc and plasma-workspace-wallpapers ship. On a machine without those packages, carry a folder
# made by data/pack_photo_sources.sh and name it. Quiet and instant when already made with the same inputs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common.sh"
[ $# -ge 2 ] || { say "usage: $0 BUILD_DIR OUT_DIR [--count N] [--seed S] [--sources FOLDER]..."; exit 2; }
build=$1 out=$2
shift 2
count=5000 seed=1 sources=()
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --sources) sources+=("$2"); shift 2 ;;
    *) say "unknown option $1"; exit 2 ;;
  esac
done
if [ ${#sources[@]} -eq 0 ] && [ -n "${CONVEYOR_PHOTO_SOURCES:-}" ]; then
  IFS=: read -r -a sources <<<"$CONVEYOR_PHOTO_SOURCES"
fi
if [ ${#sources[@]} -eq 0 ]; then
  for d in /usr/share/doc/opencv-doc/examples /usr/share/wallpapers; do [ -d "$d" ] && sources+=("$d"); done
fi
[ ${#sources[@]} -gt 0 ] || {
  say "no photo sources: install opencv-doc and plasma-workspace-wallpapers, or pass --sources FOLDER"
  say "(a folder made by data/pack_photo_sources.sh), or set CONVEYOR_PHOTO_SOURCES"
  exit 1
}
maker=$(tool "$build" imagenet_like/make_imagenet_like)
# The recipe: the tool's version and parameters, and the sizes and names of every candidate photo.
fingerprint=$(find -L "${sources[@]}" -type f \( -iname '*.jpg' -o -iname '*.jpeg' \) -printf '%s %P\n' | sort | cksum)
recipe="$("$maker" --recipe --count "$count" --seed "$seed"); sources ${fingerprint}"
stamp_matches "$out" "$recipe" && exit 0

mkdir -p "$(dirname "$out")"
staging=$(staging_dir "$out")
trap 'rm -rf "$staging"' EXIT
"$maker" --out "$staging" --count "$count" --seed "$seed" --sources "${sources[@]}"
publish "$staging" "$out" "$recipe"
say "imagenet-like: ready in $out"
