// Sweeps: the step estimated over a grid of batch sizes and spec variables (`seq_len`, `width`),
// every component at every point, and the peak fitted as a polynomial in the swept variables
// by least squares, so that a reader sees "1.2 GiB + 84.1 MiB x batch" instead of a table.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nnmem/estimate.hpp"

namespace nnmem {

/// A swept variable: "batch", or a spec variable (set with --set at each point), and its values.
struct SweepVariable {
  std::string name;
  std::vector<std::string> values;
};

/// "1,2,4..512" -> 1, 2, 4, 8, …, 512: items separated by commas, `A..B` doubling from A to B,
/// `A..B+S` counting from A to B in steps of S. Throws Error (at `where`) for anything else.
std::vector<std::string> parse_sweep_values(const std::string& text, const SourceLoc& where);

struct SweepPoint {
  std::vector<std::string> values;  // one per swept variable
  Totals totals;
  std::int64_t needed_bytes = 0;    // what a budget is held against (plan.hpp's needed_bytes)
  std::optional<std::int64_t> stage;  // with --tp/--pp: the most loaded pipeline stage, whose rank's figures these are
  std::int64_t in_flight = 1;         // its micro-batches in flight
};

/// The peak as a polynomial in the swept variables: a sum of coefficient x product of powers.
/// Memory is affine in the batch (degree 1) and at most quadratic in another variable (attention
/// in the sequence length; parameters in a width), with the batch multiplying every term of
/// the others; a variable of n values gets at most degree n - 1.
struct PolynomialFit {
  std::vector<std::string> variables;
  struct Term {
    std::vector<int> powers;        // per variable
    double coefficient = 0;         // bytes, rounded to a tenth as printed
  };
  std::vector<Term> terms;
  double max_residual = 0;          // bytes: the largest |peak - formula| over the points, with these coefficients

  double at(const std::vector<double>& x) const;
  /// The largest batch whose formula stays within `bytes`, at these values of the other
  /// variables (the batch's own entry is ignored); nullopt when the batch is not a variable or the
  /// formula does not grow with it.
  std::optional<std::int64_t> largest_batch(std::int64_t bytes, std::vector<double> x) const;
};

struct Sweep {
  std::vector<SweepVariable> vary;
  std::vector<SweepPoint> points;     // the grid, the last variable varying fastest
  std::optional<PolynomialFit> fit;   // when every swept value is a number and there are enough points
  EstimateOptions options;
  std::string model, file;
};

/// One point's figures from its spec and options (its values are filled in by sweep()).
using SweepEstimator = std::function<SweepPoint(ModelSpec, const EstimateOptions&)>;

/// Estimates every point of the grid; `load` reads the spec with the given --set overrides
/// (the sweep's added to the caller's), `at` estimates it (estimate() and needed_bytes() when
/// empty; parallel.hpp's sweep_model_parallel passes the most loaded stage's). Throws
/// nnmem::Error at the first point that fails, with the point named in a note.
Sweep sweep(const std::function<ModelSpec(const LoadOptions&)>& load, const LoadOptions& base,
            const std::vector<SweepVariable>& vary, const EstimateOptions& options, const SweepEstimator& at = {});

/// Least squares (Eigen's column-pivoting QR, columns scaled) of y over the monomials above.
std::optional<PolynomialFit> fit_polynomial(const std::vector<std::string>& variables,
                                            const std::vector<std::vector<double>>& x, const std::vector<double>& y);

}  // namespace nnmem
