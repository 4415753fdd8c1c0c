#!/usr/bin/env bash
# pack_photo_sources.sh DEST [BUILD_DIR]: copies the JPEG photos make_imagenet_like would use (the ones
# opencv-doc and plasma-workspace-wallpapers ship, at least 300 px a side and at most 5 megapixels: the
# 5120x2880 wallpapers, 17 MB of the 33 MB, stay behind) into DEST, flat, one copy per photo, so they can
# travel to a machine without those packages:
#   data/imagenet_like/make_imagenet_like.sh BUILD_DIR OUT_DIR --sources DEST
# The photos are ordered by content, not by path, so the same photos make the same set there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
[ $# -ge 1 ] && [ $# -le 2 ] || { say "usage: $0 DEST [BUILD_DIR]"; exit 2; }
dest=$1
build=${2:-$here/../build}
maker=$(tool "$build" imagenet_like/make_imagenet_like)
sources=()
for d in /usr/share/doc/opencv-doc/examples /usr/share/wallpapers; do [ -d "$d" ] && sources+=("$d"); done
[ ${#sources[@]} -gt 0 ] || { say "neither opencv-doc nor plasma-workspace-wallpapers is installed"; exit 1; }
mkdir -p "$dest"
n=0
while read -r path width height bytes; do
  # Many wallpapers share a file name (2560x1600.jpg): prefix the package folder's name.
  rel=${path#/usr/share/}
  name=$(printf '%s' "$rel" | tr '/' '_')
  cp "$path" "$dest/$name"
  n=$((n + 1))
done < <("$maker" --list-sources --sources "${sources[@]}")
say "packed $n photos, $(du -sh "$dest" | cut -f1), into $dest"
