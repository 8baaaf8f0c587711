#include "nnmem/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"

namespace nnmem {

std::optional<std::int64_t> parse_bytes(const std::string& text, SizeProblem* problem) {
  const auto refuse = [&](SizeProblem why) -> std::optional<std::int64_t> {
    if (problem) *problem = why;
    return std::nullopt;
  };
  if (problem) *problem = SizeProblem::None;
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return refuse(SizeProblem::Malformed);
  const std::string number = text.substr(0, i);
  if (number.find('.') != number.rfind('.') || number == ".") return refuse(SizeProblem::Malformed);
  std::string unit;
  for (std::size_t k = i; k < text.size(); ++k)
    if (!std::isspace(static_cast<unsigned char>(text[k]))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[k])));
  struct Unit { const char* name; double factor; };
  static const Unit units[] = {
      {"", 1},          {"b", 1},
      {"kb", 1e3},      {"mb", 1e6},        {"gb", 1e9},          {"tb", 1e12},
      {"kib", 1024.0},  {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"k", 1024.0},    {"m", 1048576.0},   {"g", 1073741824.0},   {"t", 1099511627776.0},
  };
  for (const auto& u : units) {
    if (unit != u.name) continue;
    const double value = std::strtod(number.c_str(), nullptr) * u.factor;
    // 2^63 is exact in a double; anything below it rounds to a value that fits.
    if (!std::isfinite(value) || value >= 0x1p63) return refuse(SizeProblem::TooLarge);
    return static_cast<std::int64_t>(std::llround(value));
  }
  return refuse(SizeProblem::Malformed);
}

std::string mib(std::int64_t bytes, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, static_cast<double>(bytes) / 1048576.0);
  return buf;
}

std::string exact_mib(std::int64_t bytes) {
  // bytes / 2^20 has at most 20 binary fraction digits, hence at most 20 decimal ones.
  const std::int64_t whole = bytes >> 20;
  std::int64_t frac = bytes & ((1 << 20) - 1);
  std::string out = std::to_string(whole);
  if (frac == 0) return out;
  out += '.';
  while (frac != 0) {
    frac *= 10;
    out += static_cast<char>('0' + (frac >> 20));
    frac &= (1 << 20) - 1;
  }
  return out;
}

std::string mib_truncated(std::int64_t bytes, int decimals) {
  std::string s = exact_mib(bytes);
  std::size_t dot = s.find('.');
  if (dot == std::string::npos) {
    dot = s.size();
    s += '.';
  }
  s.resize(dot + 1 + static_cast<std::size_t>(decimals), '0');
  return s;
}

namespace {
// value / 1000^k with k chosen so that it is below 1000, and units[k]: "118.01 M".
std::string scaled(std::int64_t value, double base, const char* const (&units)[7]) {
  double v = static_cast<double>(value);
  int u = 0;
  while (std::fabs(v) >= base && u < 6) {
    v /= base;
    ++u;
  }
  // std::to_chars writes what printf's "%lld" and "%.2f" would, without its format parsing.
  char buf[64];
  char* const end = u == 0 ? std::to_chars(buf, buf + sizeof buf, value).ptr
                           : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2).ptr;
  std::string out(buf, end);
  if (u != 0) (out += ' ') += units[u];
  return out;
}
}  // namespace

std::string human_bytes(std::int64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  // |bytes| / 1024^u to two decimals, truncated: exact integer arithmetic, never rounded up.
  const unsigned long long magnitude = bytes < 0 ? 0ULL - static_cast<unsigned long long>(bytes) : static_cast<unsigned long long>(bytes);
  int u = 0;
  unsigned long long unit = 1;
  while (u < 6 && magnitude / 1024 >= unit) unit *= 1024, ++u;
  char buf[32];
  if (u == 0) return std::string(buf, std::to_chars(buf, buf + sizeof buf, bytes).ptr) + " B";
  const unsigned long long rest = magnitude % unit;  // below 2^60, so 10 * rest fits
  const unsigned long long tenths = rest * 10 / unit, hundredths = rest * 10 % unit * 10 / unit;
  std::string out = bytes < 0 ? "-" : "";
  out.append(buf, std::to_chars(buf, buf + sizeof buf, magnitude / unit).ptr);
  out += '.';
  out += static_cast<char>('0' + tenths);
  out += static_cast<char>('0' + hundredths);
  (out += ' ') += units[u];
  return out;
}

std::string human_bytes_exact(std::int64_t bytes) {
  return human_bytes(bytes) + " (" + with_commas(bytes) + " bytes)";
}

std::string human_count(std::int64_t count) {
  static const char* const units[] = {"", "K", "M", "G", "T", "P", "E"};
  return scaled(count, 1000.0, units);
}

}  // namespace nnmem
