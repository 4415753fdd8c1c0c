#!/usr/bin/env bash
# make_demo_data.sh BUILD_DIR: the data ./conveyor.sh demo reads, under data/generated/ (git-ignored):
#   data/generated/fashion-mnist/         70,000 JPEGs of Fashion-MNIST, {train,test}/<class>/, {train,test}.txt
#   data/generated/imagenet-like-1000/    1,000 ImageNet-like JPEGs, train/<class>/, train.txt
#   data/generated/fields-500/            shapes drawn over 500 of them, with their masks and boxes: images/ +
#                                         masks/ (segmentation folder), instances.json (COCO), shards/
# Uses the tools built in BUILD_DIR; installs nothing (conveyor.sh does). Quiet when all is made already.
# Without the Debian packages, point CONVEYOR_FASHION_MNIST_DIR and CONVEYOR_PHOTO_SOURCES at carried copies.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { printf 'usage: %s BUILD_DIR\n' "$0" >&2; exit 2; }
build=$1
generated=$here/generated
"$here/fashion_mnist/make_fashion_mnist.sh" "$build" "$generated"
"$here/imagenet_like/make_imagenet_like.sh" "$build" "$generated/imagenet-like-1000" --count 1000
"$here/fields/make_fields.sh" "$build" "$generated/imagenet-like-1000/train" "$generated/fields-500" --count 500
