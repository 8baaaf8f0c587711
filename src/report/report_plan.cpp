// The answer of `nnmem fit`: the largest batch, what it needs and what one more step of batch
// would, how the search went; then, when asked for, the estimate at that batch.
#include <sstream>

#include "nnmem/plan.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

namespace nnmem {

namespace {

std::string compared_figure(const BatchFit& fit) {
  return fit.estimate_options.graph.device == Device::Cuda ? "what the device holds (the simulated allocator's max_memory_reserved() + --overhead)"
                                                           : "the peak of live tensors";
}

std::string budget_words(const BatchFit& fit) {
  const FitOptions& o = fit.options;
  std::string s = human_bytes_exact(o.budget_bytes);
  if (o.headroom_bytes > 0) s += " less " + human_bytes(o.headroom_bytes) + " headroom, " + human_bytes_exact(fit.usable_bytes());
  return s;
}

}  // namespace

std::string render_table(const BatchFit& fit, bool with_estimate) {
  const std::int64_t step = fit.options.multiple_of;
  const std::string what = step > 1 ? "multiple of " + with_commas(step) : "batch";
  std::ostringstream os;
  os << fit.model << " (" << fit.file << "), " << describe_step(fit.estimate_options) << "\n";
  if (fit.batch == 0 && fit.needed_bytes <= fit.usable_bytes()) {
    os << "No " << what << " fits in " << budget_words(fit) << ": batch " << with_commas(fit.first_valid_batch)
       << " runs out of device memory (--device-memory)\n";
  } else if (fit.batch == 0) {
    os << "No " << what << " fits in " << budget_words(fit) << ": batch " << with_commas(fit.first_valid_batch) << " needs "
       << human_bytes_exact(fit.needed_bytes) << ", " << human_bytes(fit.needed_bytes - fit.usable_bytes()) << " over\n";
  } else {
    os << "Largest " << what << " that fits in " << budget_words(fit) << ": " << with_commas(fit.batch) << '\n'
       << "  it needs " << human_bytes_exact(fit.needed_bytes) << ", " << human_bytes(fit.usable_bytes() - fit.needed_bytes)
       << " to spare\n";
    if (fit.next_out_of_memory)
      os << "  batch " << with_commas(fit.batch + step) << " runs out of device memory (--device-memory)\n";
    else if (fit.next_needed_bytes > 0)
      os << "  batch " << with_commas(fit.batch + step) << " would need " << human_bytes_exact(fit.next_needed_bytes) << ", "
         << human_bytes(fit.next_needed_bytes - fit.usable_bytes()) << " over\n";
    else
      os << "  (" << with_commas(fit.batch) << " is the largest batch nnmem considers, or the next one's sizes overflow)\n";
  }
  os << "Compared: " << compared_figure(fit) << '\n';
  if (!fit.smaller_batches_error.empty())
    os << "Batches below " << with_commas(fit.first_valid_batch) << " are refused (" << fit.smaller_batches_error << ")\n";
  os << "Search: the peak of live tensors, a lower bound of the compared figure that never decreases with the batch, ";
  if (fit.bound_batch >= fit.first_valid_batch) os << "allows no batch above " << with_commas(fit.bound_batch) << '\n';
  else os << "rules out every batch\n";
  os << "  (" << (fit.closed_form ? "in closed form: one estimate at the prime batch " + with_commas(fit.probe_batch) +
                                        " gives every allocation as c + k × batch" +
                                        (fit.curve_from > fit.first_valid_batch
                                             ? " from batch " + with_commas(fit.curve_from) + ", a full estimate below it; "
                                             : "; ")
                                  : "by full estimates: not every allocation of this model is c + k × batch; ")
     << fit.batches_checked << " batch size" << (fit.batches_checked == 1 ? "" : "s") << " checked from there down; "
     << fit.graphs_built << " graph" << (fit.graphs_built == 1 ? "" : "s") << " built, " << fit.estimates_made << " full estimate"
     << (fit.estimates_made == 1 ? "" : "s") << ")\n";
  if (!fit.exhaustive())
    os << "  Every batch from " << with_commas(fit.bound_batch) << " down to " << with_commas(fit.checked_down_to)
       << " was checked and none fits; below that, a bisection, which trusts what the device holds to grow with the batch\n"
       << "  (it mostly does, in steps of its segments: a batch between " << with_commas(fit.batch) << " and "
       << with_commas(fit.checked_down_to) << " may fit too)\n";
  if (with_estimate && fit.estimate) os << '\n' << render_table(*fit.estimate);
  return os.str();
}

}  // namespace nnmem
