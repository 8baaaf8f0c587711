#!/bin/sh
# nnmem against torchinfo on ResNet-50, and against the floor of a process linked as nnmem is, in
# one go (issue 16). From the checkout, after `ninja -C build`:
#   bench/vs_torchinfo.sh [PYTHON]     PYTHON has torch, torchvision and torchinfo (default python3)
# Needs hyperfine (apt-get install hyperfine). Whole processes first, then in process.
set -eu
PY=${1:-python3}
echo "== whole process (hyperfine)"
hyperfine -N --warmup 10 --runs 200 --export-markdown /tmp/nnmem_vs_floor.md \
  'build/bench/floor' \
  'build/bench/floor --parse examples/resnet50.yaml' \
  'build/nnmem estimate examples/resnet50.yaml' \
  'build/nnmem estimate examples/resnet50.yaml --device cpu'
hyperfine -N --warmup 1 --runs 10 --export-markdown /tmp/nnmem_vs_torchinfo.md \
  "$PY bench/torchinfo_resnet50.py"
cat /tmp/nnmem_vs_floor.md /tmp/nnmem_vs_torchinfo.md
echo "== in process"
build/bench/bench_estimate examples/resnet50.yaml
"$PY" bench/torchinfo_resnet50.py --repeat 20
