// The answer of `nnmem fit`, for a terminal: the largest batch, what it needs, what one more
// sample would need, then the estimate at that batch.
#include <sstream>

#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace nnmem {

namespace {
std::string size(std::int64_t bytes) { return human_bytes(bytes) + " (" + with_commas(bytes) + " bytes)"; }
}  // namespace

std::string render_table(const BatchFit& fit) {
  const Estimate& e = fit.estimate;
  const bool cuda = e.options.graph.device == Device::Cuda;
  std::ostringstream os;
  os << "Budget: " << size(fit.budget_bytes) << ", for "
     << (cuda ? "what the device holds (the simulated allocator's max_memory_reserved() + --overhead)"
              : "the peak of live tensors")
     << '\n';
  const bool oom = e.cuda_allocator && e.cuda_allocator->out_of_memory;
  if (fit.batch == 0 && oom) {
    os << "Not even one sample fits: batch 1 runs out of device memory (--device-memory).\n";
  } else if (fit.batch == 0) {
    os << "Not even one sample fits: batch 1 needs " << size(fit.needed_bytes) << ", "
       << human_bytes(fit.needed_bytes - fit.budget_bytes) << " over the budget.\n";
  } else {
    os << "Largest batch that fits: " << fit.batch << ", which needs " << size(fit.needed_bytes) << '\n';
    if (fit.next_out_of_memory)
      os << "Batch " << fit.batch + 1 << " runs out of device memory (--device-memory)\n";
    else if (fit.next_needed_bytes > 0)
      os << "Batch " << fit.batch + 1 << " would need " << size(fit.next_needed_bytes) << " ("
         << (fit.next_needed_bytes >= fit.needed_bytes ? "+" + human_bytes(fit.next_needed_bytes - fit.needed_bytes)
                                                       : "-" + human_bytes(fit.needed_bytes - fit.next_needed_bytes))
         << ")\n";
    else
      os << "(" << fit.batch << " is the largest batch nnmem considers)\n";
  }
  os << "(" << fit.estimates_made << " batch sizes estimated)\n\n" << render_table(e);
  return os.str();
}

}  // namespace nnmem
