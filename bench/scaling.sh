#!/bin/sh
# How nnmem scales with the number of layers: generated specs of 100 to 1,000,000 layers in three
# shapes — a chain written out layer by layer, a residual MLP written with `repeat` (4 layers a
# block), GPT-2's blocks (examples/gpt2.yaml with --set n_layer, 22 layers a block) — each through
# `check`, `estimate`, `estimate --format json` and `fit --budget 80GiB`. Each cell is one run of
# the whole process: CPU seconds (user + system) and peak resident memory (/usr/bin/time).
# Prints a Markdown table (bench/README.md keeps one). Usage, from the source directory:
#
#   bench/scaling.sh [NNMEM] [SIZES…]      (defaults: build/nnmem; 100 1000 10000 100000 1000000)
#
# A command taking more than NNMEM_BENCH_TIMEOUT seconds (default 120) or 4 GiB of address space
# is cut off, and its cell says so. Speed is measured here, never asserted by a test.
set -eu
nnmem=${1:-build/nnmem}
[ $# -gt 0 ] && shift
sizes=${*:-100 1000 10000 100000 1000000}
limit=${NNMEM_BENCH_TIMEOUT:-120}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# spec SHAPE LAYERS: writes $dir/SHAPE.yaml; prints the extra arguments the shape needs.
spec() {
  case $1 in
    chain) python3 -c "
import sys
n = $2
out = ['name: chain', 'inputs:', '  x: [64]', 'layers:']
for i in range(n - 1):
    out.append('  - {name: l%d, type: %s}' % (i, 'Linear, out_features: 64' if i % 2 == 0 else 'ReLU'))
out += ['  - {name: head, type: Linear, out_features: 10}', 'loss: cross_entropy']
print('\n'.join(out))" > "$dir/chain.yaml" ;;
    residual) python3 -c "
print('''name: residual
inputs:
  x: [256]
blocks:
  Res:
    layers:
      - {name: fc1, type: Linear, out_features: 256}
      - {name: act, type: GELU}
      - {name: fc2, type: Linear, out_features: 256}
      - {name: add, type: Add, inputs: [fc2, in]}
layers:
  - {name: body, block: Res, repeat: %d}
  - {name: head, type: Linear, out_features: 10}
loss: cross_entropy''' % max(1, ($2 - 1) // 4))" > "$dir/residual.yaml" ;;
    gpt2) cp examples/gpt2.yaml "$dir/gpt2.yaml"
      echo "--set n_layer=$(( ($2 - 8) / 22 > 0 ? ($2 - 8) / 22 : 1 )) --set n_embd=64 --set n_head=4 --set vocab_size=1000 --set seq_len=32" ;;
  esac
}

# cell COMMAND…: "0.12 s, 45 MiB" for one run, or why there is none.
cell() {
  if (ulimit -v 4194304; timeout "$limit" /usr/bin/time -f '%U %S %M' -o "$dir/time" "$@" > /dev/null 2> "$dir/err"); then
    awk '{ printf "%.2f s, %d MiB", $1 + $2, $3 / 1024 }' "$dir/time"
  elif [ "$?" -eq 124 ]; then
    printf 'over %s s' "$limit"
  else
    printf 'failed (%s)' "$(grep -m1 -o 'error: .*\|bad_alloc\|Killed' "$dir/err" | cut -c1-60)"
  fi
}

echo "| shape | layers | check | estimate | estimate --format json | fit --budget 80GiB |"
echo "|---|---|---|---|---|---|"
for shape in chain residual gpt2; do
  for n in $sizes; do
    extra=$(spec "$shape" "$n")
    file="$dir/$shape.yaml"
    # shellcheck disable=SC2086 # $extra is a list of arguments
    layers=$( (ulimit -v 4194304; timeout "$limit" "$nnmem" check "$file" --max-layers 2000000 $extra 2> /dev/null) |
      sed -n 's/.*ok (\([0-9,]*\) layers.*/\1/p')
    layers=${layers:-"about $n"}
    # shellcheck disable=SC2086
    printf '| %s | %s | %s | %s | %s | %s |\n' "$shape" "$layers" \
      "$(cell "$nnmem" check "$file" --max-layers 2000000 $extra)" \
      "$(cell "$nnmem" estimate "$file" --max-layers 2000000 $extra)" \
      "$(cell "$nnmem" estimate "$file" --format json --max-layers 2000000 $extra)" \
      "$(cell "$nnmem" fit "$file" --budget 80GiB --max-layers 2000000 $extra)"
  done
done
