// Sweeps (sweep.hpp): the grid of points, each estimated, and the peak fitted by least squares
// with Eigen.
#include "nnmem/sweep.hpp"

#include <Eigen/Dense>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "nnmem/checked.hpp"
#include "nnmem/plan.hpp"

namespace nnmem {

namespace {

std::optional<std::int64_t> positive(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE || v < 1) return std::nullopt;
  return v;
}

std::optional<double> number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Each combination of the variables' values, the last varying fastest.
std::vector<std::vector<std::string>> grid(const std::vector<SweepVariable>& vary) {
  std::vector<std::vector<std::string>> out = {{}};
  for (const auto& v : vary) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : out)
      for (const auto& value : v.values) {
        next.push_back(prefix);
        next.back().push_back(value);
      }
    out = std::move(next);
  }
  return out;
}

constexpr std::size_t kMaxPoints = 10000;

}  // namespace

std::vector<std::string> parse_sweep_values(const std::string& text, const SourceLoc& where) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const std::size_t dots = item.find("..");
    if (dots == std::string::npos) {
      if (item.empty()) throw Error(where, "an empty value in '" + text + "'");
      out.push_back(item);
    } else {
      const std::size_t plus = item.find('+', dots);
      const auto from = positive(item.substr(0, dots));
      const auto to = positive(item.substr(dots + 2, plus == std::string::npos ? std::string::npos : plus - dots - 2));
      const auto step = plus == std::string::npos ? std::optional<std::int64_t>(0) : positive(item.substr(plus + 1));
      if (!from || !to || !step || *to < *from)
        throw Error(where, "'" + item + "': expected A..B (doubling from A to B) or A..B+S (steps of S), with 1 <= A <= B");
      for (std::int64_t v = *from; v <= *to; v = *step ? v + *step : v * 2) {
        out.push_back(std::to_string(v));
        if (out.size() > kMaxPoints) break;
        if (v > (std::int64_t{1} << 61)) break;  // v * 2 would overflow: B is below 2^63
      }
    }
    if (out.size() > kMaxPoints) throw Error(where, "'" + text + "' gives more than " + with_commas(kMaxPoints) + " values");
  }
  return out;
}

double PolynomialFit::at(const std::vector<double>& x) const {
  double sum = 0;
  for (const Term& t : terms) {
    double m = t.coefficient;
    for (std::size_t v = 0; v < x.size(); ++v) m *= std::pow(x[v], t.powers[v]);
    sum += m;
  }
  return sum;
}

std::optional<std::int64_t> PolynomialFit::largest_batch(std::int64_t bytes, std::vector<double> x) const {
  const auto b = std::find(variables.begin(), variables.end(), "batch");
  if (b == variables.end()) return std::nullopt;
  const auto at_batch = [&](double batch) {
    x[static_cast<std::size_t>(b - variables.begin())] = batch;
    return at(x);
  };
  const double constant = at_batch(0), slope = at_batch(1) - constant;  // the formula is affine in the batch
  if (!(slope > 0)) return std::nullopt;
  const double largest = std::floor((static_cast<double>(bytes) - constant) / slope);
  return largest < 0 ? 0 : largest >= static_cast<double>(kMaxBatch) ? kMaxBatch : static_cast<std::int64_t>(largest);
}

std::optional<PolynomialFit> fit_polynomial(const std::vector<std::string>& variables, const std::vector<std::vector<double>>& x,
                                            const std::vector<double>& y) {
  PolynomialFit f;
  f.variables = variables;
  // The powers each variable may take: the batch 0..1, others 0..2, at most (distinct values - 1).
  std::vector<int> degree;
  for (std::size_t v = 0; v < variables.size(); ++v) {
    std::set<double> distinct;
    for (const auto& p : x) distinct.insert(p[v]);
    degree.push_back(std::min<int>(static_cast<int>(distinct.size()) - 1, variables[v] == "batch" ? 1 : 2));
  }
  std::vector<std::vector<int>> monomials = {{}};
  for (int d : degree) {
    std::vector<std::vector<int>> next;
    for (const auto& m : monomials)
      for (int p = 0; p <= d; ++p) {
        next.push_back(m);
        next.back().push_back(p);
      }
    monomials = std::move(next);
  }
  const auto rows = static_cast<Eigen::Index>(x.size()), cols = static_cast<Eigen::Index>(monomials.size());
  if (rows < cols) return std::nullopt;
  Eigen::MatrixXd a(rows, cols);
  Eigen::VectorXd b(rows), scale(cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    b(i) = y[static_cast<std::size_t>(i)];
    for (Eigen::Index j = 0; j < cols; ++j) {
      double m = 1;
      for (std::size_t v = 0; v < variables.size(); ++v) m *= std::pow(x[static_cast<std::size_t>(i)][v], monomials[static_cast<std::size_t>(j)][v]);
      a(i, j) = m;
    }
  }
  for (Eigen::Index j = 0; j < cols; ++j) {  // columns scaled to 1: the powers span many orders of magnitude
    scale(j) = a.col(j).cwiseAbs().maxCoeff();
    if (scale(j) > 0) a.col(j) /= scale(j);
  }
  const Eigen::VectorXd c = a.colPivHouseholderQr().solve(b);
  for (Eigen::Index j = 0; j < cols; ++j) {
    const double coefficient = scale(j) > 0 ? c(j) / scale(j) : 0;
    f.terms.push_back({monomials[static_cast<std::size_t>(j)], std::round(coefficient * 10) / 10});
  }
  for (std::size_t i = 0; i < x.size(); ++i) f.max_residual = std::max(f.max_residual, std::fabs(y[i] - f.at(x[i])));
  return f;
}

Sweep sweep(const std::function<ModelSpec(const LoadOptions&)>& load, const LoadOptions& base,
            const std::vector<SweepVariable>& vary, const EstimateOptions& options, const SweepEstimator& at) {
  Sweep s;
  s.vary = vary;
  s.options = options;
  // Counted before the grid is made: two lists of 10,000 values are 10^8 points, 3.4 GB of
  // them held (10 s) before they were refused.
  std::int64_t count = 1;
  bool beyond = false;  // more points than an int64_t counts
  for (const auto& v : vary) {
    try {
      count = checked_mul(count, static_cast<std::int64_t>(v.values.size()));
    } catch (const OverflowError&) {
      beyond = true;
      break;
    }
  }
  if (beyond || count > static_cast<std::int64_t>(kMaxPoints))
    throw Error(load(base).loc, "the sweep has " + (beyond ? "more than " + with_commas(std::numeric_limits<std::int64_t>::max()) : with_commas(count)) +
                                    " points; nnmem estimates at most " + with_commas(kMaxPoints));
  const auto points = grid(vary);
  bool numeric = !vary.empty();
  for (const auto& values : points) {
    LoadOptions lo = base;
    EstimateOptions o = options;
    for (std::size_t v = 0; v < vary.size(); ++v) {
      if (vary[v].name == "batch") o.graph.batch = *positive(values[v]);
      else lo.overrides.emplace_back(vary[v].name, values[v]);
      numeric = numeric && number(values[v]).has_value();
    }
    try {
      ModelSpec spec = load(lo);
      s.model = spec.name;
      s.file = spec.file;
      if (at) {
        s.points.push_back(at(std::move(spec), o));
      } else {
        const Estimate e = estimate(std::move(spec), o);
        s.points.push_back({{}, e.totals, needed_bytes(e), std::nullopt, 1});
      }
      s.points.back().values = values;
    } catch (const Error& e) {
      std::string point;
      for (std::size_t v = 0; v < vary.size(); ++v) point += (v ? ", " : "") + vary[v].name + "=" + values[v];
      std::vector<Note> notes = e.notes();
      notes.push_back({e.loc(), "at the sweep's point " + point});
      throw Error(e.loc(), e.message(), notes);
    }
  }
  if (numeric) {
    std::vector<std::string> names;
    for (const auto& v : vary) names.push_back(v.name);
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const auto& p : s.points) {
      std::vector<double> row;
      for (const auto& value : p.values) row.push_back(*number(value));
      x.push_back(std::move(row));
      y.push_back(static_cast<double>(p.totals.peak_bytes));
    }
    s.fit = fit_polynomial(names, x, y);
  }
  return s;
}

}  // namespace nnmem
