// Byte sizes for people: parsing "24GiB" / "16GB" / "300M" and printing MiB.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nnmem {

/// Why parse_bytes refused a text.
enum class SizeProblem { None, Malformed, TooLarge };

/// Parses a size: a number with an optional unit B, KB, MB, GB, TB (powers of 1000), KiB, MiB,
/// GiB, TiB (powers of 1024) or K, M, G, T (taken as binary, as nvidia-smi does). Case-insensitive.
/// std::nullopt for anything else, negative values or sizes of 2^63 bytes or more; `problem`
/// (if given) then says which.
std::optional<std::int64_t> parse_bytes(const std::string& text, SizeProblem* problem = nullptr);

/// bytes / 2^20 with `decimals` digits: 597760 -> "0.57".
std::string mib(std::int64_t bytes, int decimals = 2);
/// The exact value of bytes / 2^20 (always a finite binary fraction): 597760 -> "0.570068359375".
std::string exact_mib(std::int64_t bytes);
/// bytes / 2^20 truncated (never rounded up) to `decimals` digits: 39295608 -> "37.4752".
std::string mib_truncated(std::int64_t bytes, int decimals = 4);
/// A readable size in the unit its magnitude calls for (B, KiB, MiB below a GiB, GiB, …) with two
/// decimals, truncated so that a figure never reads larger than it is: "512 B", "1.50 KiB",
/// "12.49 MiB" (13,098,536 bytes), "-3.25 GiB".
std::string human_bytes(std::int64_t bytes);
/// The same with the exact bytes beside it: "12.49 MiB (13,098,536 bytes)".
std::string human_bytes_exact(std::int64_t bytes);
/// A readable count: "118.01 M", "1.81 G".
std::string human_count(std::int64_t count);

}  // namespace nnmem
