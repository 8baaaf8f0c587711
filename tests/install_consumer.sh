#!/bin/sh
# `meson install` into a scratch directory, then build tests/consumer.cpp with only what the
# pkg-config file says, and run it on ResNet-18: the installed headers, library (with every
# self-registering layer) and pkg-config file must be enough.
#   tests/install_consumer.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 source=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Through ninja's install target and the build directory's own records, so that the meson that
# configured the directory installs it (another one on PATH may refuse the directory).
DESTDIR="$scratch" ninja -C "$build" install >/dev/null
prefix=$(python3 -c "import json,sys; print(next(o['value'] for o in json.load(open(sys.argv[1])) if o['name']=='prefix'))" \
  "$build/meson-info/intro-buildoptions.json")
pcdir=$(dirname "$(find "$scratch" -name nnmem.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$scratch$prefix" --cflags --libs nnmem)
c++ -O1 -o "$scratch/consumer" "$source/tests/consumer.cpp" $flags
test -x "$scratch$prefix/bin/nnmem"
"$scratch/consumer" "$source/examples/resnet18.yaml"
echo "1 passed, 0 failed"
