#!/bin/sh
# Prints tests/allocator_digest.hpp's digests for the CUDA allocator model of an earlier commit
# (default: d039e1c, the last with the rb-tree free sets and sorted snapshots), the figures
# test_chunked_set.cpp expects of the current one:  tests/allocator_digest_of.sh [COMMIT]
set -eu
commit=${1:-d039e1c}
root=$(git rev-parse --show-toplevel)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src/memory"
for f in cuda_allocator.hpp cuda_allocator.cpp cuda_expandable.cpp chunked_set.hpp; do
  git -C "$root" show "$commit:src/memory/$f" > "$dir/src/memory/$f" 2>/dev/null || rm "$dir/src/memory/$f"
done
cat > "$dir/main.cpp" <<'CPP'
#include <cstdio>
#include "src/memory/cuda_allocator.hpp"
#include "allocator_digest.hpp"
int main() {
  for (int which = 0; which < 4; ++which)
    std::printf("%#llxULL\n", static_cast<unsigned long long>(
        nnmem::test::allocator_digest<nnmem::detail::CudaCachingAllocator>(which, 20000)));
}
CPP
g++ -std=c++20 -O2 -I"$dir" -I"$root/include" -I"$root/tests" "$dir/main.cpp" "$dir/src/memory/cuda_allocator.cpp" \
  "$dir/src/memory/cuda_expandable.cpp" "$root/src/diagnostic.cpp" -o "$dir/digest"
"$dir/digest"
