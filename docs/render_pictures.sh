#!/bin/sh
# Regenerates the pictures in docs/: nnmem writes SVG, a headless Chromium renders PNG.
# Not part of CI (CI needs no browser). Run from the repository root after building:
#   sh docs/render_pictures.sh [build/nnmem]
set -eu
nnmem=${1:-build/nnmem}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nnmem" sweep examples/resnet50.yaml --vary batch=1,2,4,8,16,32,64 --budget 4GiB --plot "$tmp/sweep-resnet50.svg" >/dev/null
"$nnmem" estimate examples/resnet18.yaml --batch 32 --budget 1GiB --summary \
  --plot "$tmp/timeline-resnet18.svg" --plot "$tmp/layers-resnet18.svg" >/dev/null
render() {  # svg, png, width, height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot="$2" --window-size="$3,$4" "$1" 2>/dev/null
}
render "$tmp/sweep-resnet50.svg" docs/sweep-resnet50.png 1180 560
render "$tmp/timeline-resnet18.svg" docs/timeline-resnet18.png 1180 560
render "$tmp/layers-resnet18.svg" docs/layers-resnet18.png 1100 726
