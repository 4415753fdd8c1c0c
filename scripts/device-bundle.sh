#!/usr/bin/env bash
# Packs what a run on the GPU machine needs into .carry/ (git-ignored), within the 64 MiB that travels:
# the chosen binaries from BUILD_DIR (stripped), the shared libraries they need that the GPU machine lacks,
# the device helper scripts, and a subset of Debian's photos to make the ImageNet-like set there.
#   scripts/device-bundle.sh BUILD_DIR BINARY_NAME...
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1; shift
rm -rf .carry && mkdir -p .carry/bin .carry/lib .carry/tools
for name in "$@"; do
  bin=$(find "$build" -type f -name "$name" -perm -u+x | head -1)
  [ -n "$bin" ] || { echo "device-bundle: no binary $name in $build" >&2; exit 1; }
  strip -o ".carry/bin/$name" "$bin"
done
/work/shared/tools/device-libs .carry/lib .carry/bin/* >/dev/null
cp /work/shared/tools/device-env /work/shared/tools/device-libs .carry/tools/
if [ -x data/pack_photo_sources.sh ]; then data/pack_photo_sources.sh .carry/photos >/dev/null; fi
du -sh .carry/* | sed 's/^/device-bundle: /'
