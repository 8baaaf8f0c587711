// PyTorch's CUDA caching allocator, simulated: DeviceCachingAllocator's malloc and free paths
// (c10/cuda/CUDACachingAllocator.cpp), each function here named after the one it models. Blocks
// live in one vector and refer to their segment neighbours by index; a pool's cached blocks are
// a set ordered by (size, address), as PyTorch's BlockComparatorSize orders them.
#include "cuda_allocator.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

#include "nnmem/checked.hpp"

namespace nnmem::detail {

namespace {
constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kLowest = std::numeric_limits<std::int64_t>::min();
// Ordinary segments get addresses from kFirstAddress up, each above the last; expandable
// segments sit at 2^61 and above (cuda_expandable.cpp).
constexpr std::int64_t kFirstAddress = std::int64_t{1} << 32;
constexpr std::int64_t kAddressLimit = std::int64_t{1} << 61;

std::int64_t round_up(std::int64_t value, std::int64_t unit) { return checked_mul(checked_add(value, unit - 1) / unit, unit); }
bool power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
int log2_floor(std::int64_t v) { return std::bit_width(static_cast<std::uint64_t>(v)) - 1; }

// roundup_power2_next_division: the next of `divisions` equal steps between the powers of two
// around `size` (1200 in 4 divisions of 1024..2048 -> 1280).
std::int64_t next_division(std::int64_t size, std::int64_t divisions) {
  if (power_of_two(size)) return size;
  const std::int64_t floor = std::int64_t{1} << log2_floor(size);
  const std::int64_t step = floor >> log2_floor(divisions);
  if (step == 0) return checked_mul(floor, 2);
  const std::int64_t rounded = size & ~(step - 1);
  return rounded == size ? size : checked_add(rounded, step);
}
}  // namespace

std::string CudaCachingAllocator::problem(const CudaAllocatorConfig& config) {
  if (config.max_split_size && *config.max_split_size < kMinMaxSplitSize)
    return "max_split_size must be at least 20 MiB, as PyTorch requires; found " + std::to_string(*config.max_split_size) +
           " bytes";
  for (const std::int64_t d : config.roundup_power2_divisions)
    if (d != 0 && !power_of_two(d))
      return "roundup_power2_divisions must be a power of two (or 0 to disable it); found " + std::to_string(d);
  if (config.capacity_bytes < 0) return "the allocator's capacity cannot be negative";
  return {};
}

CudaCachingAllocator::CudaCachingAllocator(const CudaAllocatorConfig& config)
    : config_(config),
      plain_rounding_(std::all_of(config.roundup_power2_divisions.begin(), config.roundup_power2_divisions.end(),
                                  [](std::int64_t d) { return d <= 1; })),
      max_split_size_(config.max_split_size.value_or(kUnlimited)),
      // The small pool's ordinary segments are 2 MiB, split in multiples of 512 bytes: size classes.
      cached_{FreeBlocks(!config.expandable_segments), FreeBlocks(false)},
      next_address_(kFirstAddress) {
  if (const std::string p = problem(config); !p.empty()) throw std::invalid_argument(p);
  static_assert(kSmallBuffer == FreeBlocks::kLargest && kMinBlockSize == FreeBlocks::kUnit);
}

// round_size (its usual case inline, cuda_allocator.hpp): at least 512 bytes; a multiple of 512,
// or with roundup_power2_divisions for the request's interval (from 1 MiB, one per power of
// two), the next division.
std::int64_t CudaCachingAllocator::rounded_otherwise(std::int64_t bytes) const {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const int interval = std::clamp(log2_floor(bytes) - 20, 0, static_cast<int>(CudaAllocatorConfig::kRoundupIntervals) - 1);
  const std::int64_t divisions = config_.roundup_power2_divisions[static_cast<std::size_t>(interval)];
  // (PyTorch's `size > kMinBlockSize * divisions`, which cannot hold for divisions this large.)
  if (divisions > 1 && divisions <= kMaxRequest / kMinBlockSize && bytes > kMinBlockSize * divisions)
    return next_division(bytes, divisions);
  return round_up(bytes, kMinBlockSize);
}

// get_allocation_size: what a new segment for a request of this (rounded) size is.
std::int64_t CudaCachingAllocator::allocation_size(std::int64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

void CudaCachingAllocator::delete_block(int id) {
  live_[static_cast<std::size_t>(id)] = 0;
  unused_ids_.push_back(id);
}

void CudaCachingAllocator::uncache(int id) { cached_[at(id).pool].erase({at(id).size, at(id).address, id}); }

void CudaCachingAllocator::add_reserved(Pool pool, std::int64_t bytes) {
  reserved_ = checked_add(reserved_, bytes);
  if (pool == kSmall) reserved_small_ += bytes;
  max_reserved_ = std::max(max_reserved_, reserved_);
}

bool CudaCachingAllocator::fits_capacity(std::int64_t more) const {
  return config_.capacity_bytes == 0 || checked_add(reserved_, more) <= config_.capacity_bytes;
}

int CudaCachingAllocator::malloc(std::int64_t bytes) {
  if (bytes <= 0) throw std::logic_error("the CUDA allocator is asked for " + std::to_string(bytes) + " bytes");
  if (bytes >= kMaxRequest) return -1;  // "CUDA out of memory. Tried to allocate more than 1EB memory."
  const std::int64_t size = round_size(bytes);
  const Pool pool = pool_of(size);
  const std::int64_t alloc_size = allocation_size(size);
  int id = get_free_block(pool, size);
  if (id < 0) {
    id = alloc_block(pool, size, alloc_size);
    // On failure: free oversize cached blocks (with max_split_size), then every cached unsplit
    // segment, retrying after each.
    if (id < 0 && release_available_cached_blocks(pool, size)) id = alloc_block(pool, size, alloc_size);
    if (id < 0) {
      release_cached_blocks();
      ++alloc_retries_;
      id = alloc_block(pool, size, alloc_size);
    }
    if (id < 0) return -1;
  }
  const int handle = alloc_found_block(id, size);
  changed(at(handle).segment);
  return handle;
}

// get_free_block: the smallest cached block that fits, the lowest address among equals; never
// an oversize block (>= max_split_size) for a request below it, nor one 20 MiB or more larger
// than an oversize request (max_non_split_rounding_size's default).
int CudaCachingAllocator::get_free_block(Pool pool, std::int64_t size) {
  if (cached_[pool].by_class()) {  // the small pool's blocks, never oversize (2 MiB < 20 MiB)
    const auto found = cached_[pool].first_fit(size);
    if (!found) return -1;
    cached_[pool].erase_first(*found);
    return found->id;
  }
  auto& cached = cached_[pool].sorted();
  auto it = cached.lower_bound({size, kLowest, -1});
  if (it == cached.end()) return -1;
  if (at(it->id).expandable) {
    // A block at the end of an expandable segment's mapped memory counts as the size it could
    // grow to: prefer a later (larger) block that could not grow further.
    const auto expandable_size = [&](int id) {
      const Block& b = at(id);
      return b.size + (b.next >= 0 && !at(b.next).mapped ? at(b.next).size : 0);
    };
    for (auto next = std::next(it); at(it->id).expandable && next != cached.end() &&
                                    expandable_size(next->id) < expandable_size(it->id);)
      it = next++;
  }
  const std::int64_t found = it->size;
  if (size < max_split_size_ && found >= max_split_size_) return -1;
  if (size >= max_split_size_ && found >= checked_add(size, kLargeBuffer)) return -1;
  const int id = it->id;
  cached.erase(it);
  return id;
}

// should_split: small-pool blocks (and every expandable one) keep a remainder of 512 bytes or
// more; large-pool blocks one of more than 1 MiB, and only for requests below max_split_size.
bool CudaCachingAllocator::should_split(int id, std::int64_t size) const {
  const std::int64_t remaining = at(id).size - size;
  if (at(id).pool == kSmall || config_.expandable_segments) return remaining >= kMinBlockSize;
  return size < max_split_size_ && remaining > kSmallSize;
}

// alloc_found_block: the request takes the front of the block; the remainder stays cached.
int CudaCachingAllocator::alloc_found_block(int id, std::int64_t size) {
  if (should_split(id, size)) {
    const int remaining = id;
    Block front = at(remaining);
    front.size = size;
    front.next = remaining;
    id = new_block(front);
    if (at(id).prev >= 0) at(at(id).prev).next = id;
    at(remaining).prev = id;
    at(remaining).address += size;
    at(remaining).size -= size;
    cache(remaining);
  }
  at(id).allocated = true;
  allocated_ = checked_add(allocated_, at(id).size);
  max_allocated_ = std::max(max_allocated_, allocated_);
  return id;
}

// free / free_block: the block merges with free neighbours of its segment, then is cached.
void CudaCachingAllocator::free(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size() || !live_[static_cast<std::size_t>(handle)] ||
      !at(handle).allocated)
    throw std::logic_error("the CUDA allocator is asked to free a block it has not handed out");
  changed(at(handle).segment);
  at(handle).allocated = false;
  allocated_ -= at(handle).size;
  const int prev = at(handle).prev, next = at(handle).next;
  merge_blocks(handle, prev);
  merge_blocks(handle, next);
  cache(handle);
}

// try_merge_blocks: dst absorbs src, a free neighbour that is mapped alike; src's bytes, or 0.
std::int64_t CudaCachingAllocator::try_merge_blocks(int dst, int src) { return merge_blocks(dst, src); }
std::int64_t CudaCachingAllocator::merge_blocks(int dst, int src) {
  if (src < 0 || at(src).allocated || at(src).mapped != at(dst).mapped) return 0;
  const Block s = at(src);
  if (at(dst).prev == src) {
    at(dst).address = s.address;
    at(dst).prev = s.prev;
    if (s.prev >= 0) at(s.prev).next = dst;
    else segments_[static_cast<std::size_t>(s.segment)] = dst;
  } else {
    at(dst).next = s.next;
    if (s.next >= 0) at(s.next).prev = dst;
  }
  at(dst).size += s.size;
  if (s.mapped) cached_[s.pool].erase({s.size, s.address, src});
  else unmapped_[s.pool].erase({s.address, src});
  delete_block(src);
  return s.size;
}

// alloc_block: a new segment of alloc_size (cudaMalloc), or with expandable segments more of
// the pool's segment mapped; -1 when the capacity does not allow it.
int CudaCachingAllocator::alloc_block(Pool pool, std::int64_t size, std::int64_t alloc_size) {
  if (config_.expandable_segments) return try_allocate_expandable_block(pool, size);
  if (!fits_capacity(alloc_size)) return -1;
  Block b;
  b.address = next_address_;
  b.size = alloc_size;
  b.pool = pool;
  b.segment = add_segment();
  next_address_ = checked_add(next_address_, alloc_size);
  if (next_address_ > kAddressLimit) throw OverflowError("the simulated CUDA segments' addresses, " + std::to_string(next_address_));
  add_reserved(pool, alloc_size);
  return new_block(b);
}

// release_block: a cached, unsplit segment goes back to the device (cudaFree).
void CudaCachingAllocator::release_block(int id) {
  relaid_ = true;
  uncache(id);
  segments_[static_cast<std::size_t>(at(id).segment)] = -1;
  add_reserved(at(id).pool, -at(id).size);
  delete_block(id);
}

// release_available_cached_blocks (only with max_split_size): the smallest oversize cached
// block at least as large as the request, or else the largest ones until as much is freed.
// (PyTorch asserts that none is expandable; such blocks are left alone here.)
bool CudaCachingAllocator::release_available_cached_blocks(Pool pool, std::int64_t size) {
  // (Size classes hold blocks of 2 MiB at most, none oversize: max_split_size is 20 MiB or more.)
  if (max_split_size_ == kUnlimited || cached_[pool].by_class()) return false;
  auto& cached = cached_[pool].sorted();
  const std::int64_t key = std::max(size, max_split_size_);
  auto it = cached.lower_bound({key, kLowest, -1});
  if (it != cached.end()) {
    if (at(it->id).expandable) return false;
    release_block(it->id);
    return true;
  }
  if (it == cached.begin()) return false;
  std::int64_t released = 0;
  --it;
  while (released < key && it->size >= max_split_size_ && !at(it->id).expandable) {
    const int id = it->id;
    released = checked_add(released, it->size);
    const bool first = it == cached.begin();
    if (!first) --it;
    release_block(id);
    if (first) break;
  }
  return released >= key;
}

// release_cached_blocks: every cached unsplit segment is freed, large pool first; expandable
// segments unmap their free pages (and disappear when nothing is left mapped).
void CudaCachingAllocator::release_cached_blocks() {
  for (const Pool pool : {kLarge, kSmall}) {
    std::vector<int> to_release, to_unmap;
    cached_[pool].for_each([&](const FreeKey& k) {
      if (at(k.id).expandable) to_unmap.push_back(k.id);
      else if (at(k.id).prev < 0 && at(k.id).next < 0) to_release.push_back(k.id);
    });
    for (const int id : to_release) release_block(id);
    for (const int id : to_unmap) {
      unmap_block(id);
      if (at(id).prev < 0 && at(id).next < 0 && !at(id).mapped) {
        unmapped_[pool].erase({at(id).address, id});
        segments_[static_cast<std::size_t>(at(id).segment)] = -1;
        delete_block(id);
        expandable_open_[pool] = false;
      }
    }
  }
}

bool CudaCachingAllocator::take_changed_segments(std::vector<int>& out) {
  for (const int s : changed_) changed_mark_[static_cast<std::size_t>(s)] = 0;
  const bool kept = !std::exchange(relaid_, false);
  if (kept) out.insert(out.end(), changed_.begin(), changed_.end());
  changed_.clear();
  return kept;
}

std::vector<CudaCachingAllocator::BlockInfo> CudaCachingAllocator::snapshot() const {
  std::vector<BlockInfo> out;
  for_each_block([&](const BlockInfo& b) { out.push_back(b); });
  return out;
}

std::int64_t CudaCachingAllocator::segments() const {
  std::int64_t n = 0;
  for_each_placed_block([&](const BlockInfo& b, std::int64_t, std::int64_t) { n += b.segment_start ? 1 : 0; });
  return n;
}

}  // namespace nnmem::detail
