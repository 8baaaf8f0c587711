// Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): each pool has one
// segment of virtual address space that is mapped to memory page by page (2 MiB pages for the
// small pool, 20 MiB for the large one) as requests need it, the unmapped rest being a block
// of its own. Modelled after find_expandable_block, map_block, try_allocate_expandable_block
// and unmap_block in c10/cuda/CUDACachingAllocator.cpp.
//
// PyTorch reserves 1 1/8 times the device's memory of address space per segment and opens
// another segment when that runs out; here a pool's segment has 2^61 bytes of address space,
// enough for any request, so it never needs a second one.
#include <algorithm>
#include <stdexcept>

#include "cuda_allocator.hpp"
#include "nnmem/checked.hpp"

namespace nnmem::detail {

namespace {
constexpr std::int64_t kExpandableSpace = std::int64_t{1} << 61;
}

std::int64_t CudaCachingAllocator::expandable_base(Pool pool) const { return pool == kSmall ? kExpandableSpace : 2 * kExpandableSpace; }

// try_allocate_expandable_block: map the lowest free-or-unmapped stretch of address space with
// room for `size`, page by page, merging it into one free block; returned uncached.
int CudaCachingAllocator::try_allocate_expandable_block(Pool pool, std::int64_t size) {
  int candidate = find_expandable_block(pool, size);
  if (!at(candidate).mapped && !map_block(candidate, std::min(at(candidate).size, size))) return -1;
  while (at(candidate).size < size) {
    // A free block followed by unmapped space: map what is missing; the two merge.
    const int next = at(candidate).next;
    if (!map_block(next, std::min(size - at(candidate).size, at(next).size))) return -1;
    candidate = next;
  }
  uncache(candidate);
  return candidate;
}

// find_expandable_block: the lowest unmapped block (or the free block just before it) from
// which free and unmapped blocks run on for `size` bytes; a new segment if there is none.
int CudaCachingAllocator::find_expandable_block(Pool pool, std::int64_t size) {
  const auto allocatable = [&](int id) { return id >= 0 && !at(id).allocated; };
  const auto has_room = [&](int id) {
    std::int64_t bytes = 0;
    for (; bytes < size && allocatable(id); id = at(id).next) bytes += at(id).size;
    return bytes >= size;
  };
  for (const auto& [address, id] : unmapped_[pool]) {
    const int start = allocatable(at(id).prev) ? at(id).prev : id;
    if (has_room(start)) return start;
  }
  if (expandable_open_[pool]) throw std::logic_error("an expandable segment ran out of address space");
  Block space;
  space.address = expandable_base(pool);
  space.size = kExpandableSpace;
  space.pool = pool;
  space.mapped = false;
  space.expandable = true;
  space.segment = add_segment();
  const int id = new_block(space);
  unmapped_[pool].insert({space.address, id});
  expandable_open_[pool] = true;
  return id;
}

// map_block: the pages covering the block's first `size` bytes are mapped (false if the
// capacity does not allow them); the unmapped rest becomes a block of its own, and the mapped
// part merges with free neighbours and is cached.
bool CudaCachingAllocator::map_block(int id, std::int64_t size) {
  const Block b = at(id);
  if (b.mapped || size <= 0 || size > b.size) throw std::logic_error("mapping an expandable block that cannot be mapped");
  const std::int64_t page = page_size(b.pool);
  const std::int64_t offset = b.address - expandable_base(b.pool);
  if (offset % page != 0) throw std::logic_error("an unmapped block that does not start a page");
  const std::int64_t mapped = checked_mul(checked_add(size, page - 1) / page, page);
  if (!fits_capacity(mapped)) return false;
  unmapped_[b.pool].erase({b.address, id});
  at(id).mapped = true;
  if (mapped < b.size) {
    Block rest = b;
    rest.address = b.address + mapped;
    rest.size = b.size - mapped;
    rest.prev = id;
    const int r = new_block(rest);
    if (rest.next >= 0) at(rest.next).prev = r;
    at(id).next = r;
    at(id).size = mapped;
    unmapped_[b.pool].insert({rest.address, r});
  }
  try_merge_blocks(id, at(id).prev);
  try_merge_blocks(id, at(id).next);
  cache(id);
  add_reserved(b.pool, mapped);
  return true;
}

// unmap_block: the whole pages inside a free block are unmapped (given back to the device);
// the partial pages at either end stay mapped as free blocks of their own.
void CudaCachingAllocator::unmap_block(int id) {
  relaid_ = true;
  const Block b = at(id);
  const std::int64_t page = page_size(b.pool);
  const std::int64_t base = expandable_base(b.pool);
  const std::int64_t first = (b.address - base + page - 1) / page;
  const std::int64_t last = (b.address + b.size - base) / page;
  if (first >= last) return;
  uncache(id);
  const std::int64_t start = base + first * page, length = (last - first) * page;
  const auto split_off = [&](std::int64_t address, std::int64_t size, bool before) {
    Block part = b;
    part.address = address;
    part.size = size;
    part.prev = before ? b.prev : id;
    part.next = before ? id : at(id).next;
    const int p = new_block(part);
    if (before) {
      if (part.prev >= 0) at(part.prev).next = p;
      at(id).prev = p;
    } else {
      if (part.next >= 0) at(part.next).prev = p;
      at(id).next = p;
    }
    cache(p);
  };
  if (start > b.address) split_off(b.address, start - b.address, true);
  if (b.address + b.size > start + length) split_off(start + length, b.address + b.size - start - length, false);
  at(id).address = start;
  at(id).size = length;
  at(id).mapped = false;
  try_merge_blocks(id, at(id).prev);
  try_merge_blocks(id, at(id).next);
  unmapped_[b.pool].insert({at(id).address, id});
  add_reserved(b.pool, -length);
}

}  // namespace nnmem::detail
