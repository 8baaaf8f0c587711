// safetensors' header (https://github.com/huggingface/safetensors, its format section and
// safetensors/src/tensor.rs): 8 bytes, a little-endian u64 N, then N bytes of JSON — an object
// whose keys are tensor names, each {"dtype", "shape", "data_offsets": [begin, end]} with the
// offsets relative to the byte after the header, plus an optional "__metadata__" of strings —
// then the data. Only the first 8 + N bytes are read.
#include "nnmem/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../descriptor.hpp"
#include "json_text.hpp"

namespace nnmem {

namespace {

// The library refuses larger headers (MAX_HEADER_SIZE, 100,000,000 bytes).
constexpr std::int64_t kMaxHeader = 100'000'000;
// A dimension beyond this cannot be real (the product would overflow first anyway).
constexpr std::int64_t kMaxSize = std::int64_t{1} << 48;

constexpr std::array<std::pair<std::string_view, std::int64_t>, 16> kDtypes = {{
    {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4}, {"F16", 2}, {"BF16", 2},
    {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1},
}};

// Reads exactly `n` bytes at `offset`, or fewer when the file ends.
std::string read_at(int fd, std::int64_t offset, std::int64_t n, const std::string& path) {
  std::string out(static_cast<std::size_t>(n), '\0');
  std::int64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out.data() + got, static_cast<std::size_t>(n - got), offset + got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error({path, 0, 0}, std::string("cannot read the file: ") + std::strerror(errno));
    if (r == 0) break;
    got += r;
  }
  out.resize(static_cast<std::size_t>(got));
  return out;
}

// Where a byte of the header is in the file: line 1, its column counted in bytes from the
// file's start (8 bytes of length come first).
SourceLoc at_byte(const SourcePath& path, std::size_t header_offset) {
  return {path, 1, static_cast<int>(std::min<std::size_t>(8 + header_offset + 1, 1'000'000'000))};
}

SafetensorsTensor tensor_of(const std::string& name, const nlohmann::ordered_json& v, const SourceLoc& loc) {
  const auto bad = [&](const std::string& field, const std::string& expected) {
    const std::string found = v.contains(field) ? v[field].dump() : "nothing";
    throw Error(loc, "tensor '" + name + "': '" + field + "' must be " + expected + ", found " +
                         (found.size() > 80 ? found.substr(0, 77) + "..." : found));
  };
  if (!v.is_object()) throw Error(loc, "tensor '" + name + "': expected an object with dtype, shape and data_offsets, found " + v.dump().substr(0, 80));
  SafetensorsTensor t;
  t.name = name;
  t.loc = loc;
  if (!v.contains("dtype") || !v["dtype"].is_string()) bad("dtype", "a string such as \"F32\"");
  t.dtype = v["dtype"].get<std::string>();
  if (safetensors_dtype_size(t.dtype) == 0) {
    std::string known;
    for (const auto& [d, size] : kDtypes) known += (known.empty() ? "" : ", ") + std::string(d);
    bad("dtype", "one of " + known);
  }
  if (!v.contains("shape") || !v["shape"].is_array()) bad("shape", "a list of sizes");
  for (const auto& d : v["shape"]) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSize)) bad("shape", "sizes from 0 to " + with_commas(kMaxSize));
    t.shape.push_back(d.get<std::int64_t>());
  }
  const auto& o = v.contains("data_offsets") ? v["data_offsets"] : nlohmann::ordered_json();
  if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned() ||
      o[0].get<std::uint64_t>() > o[1].get<std::uint64_t>() || o[1].get<std::uint64_t>() > (std::uint64_t{1} << 62))
    bad("data_offsets", "[begin, end] with begin <= end");
  t.begin = o[0].get<std::int64_t>();
  t.end = o[1].get<std::int64_t>();
  for (const auto& [key, value] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw Error(loc, "tensor '" + name + "': unknown field '" + key + "' (a tensor has dtype, shape and data_offsets)");
  std::int64_t bytes = 0;
  try {
    bytes = checked_mul(t.numel(), safetensors_dtype_size(t.dtype));
  } catch (const OverflowError&) {
    throw SizeError(loc, "tensor '" + name + "': its size does not fit in 64 bits");
  }
  if (bytes != t.end - t.begin)
    throw Error(loc, "tensor '" + name + "': shape " + to_string(t.shape) + " of " + t.dtype + " is " + with_commas(bytes) +
                         " bytes, but data_offsets [" + with_commas(t.begin) + ", " + with_commas(t.end) + "] span " +
                         with_commas(t.end - t.begin));
  return t;
}

}  // namespace

std::int64_t safetensors_dtype_size(const std::string& dtype) {
  for (const auto& [name, size] : kDtypes)
    if (name == dtype) return size;
  return 0;
}

SafetensorsFile read_safetensors(const std::string& path) {
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (file.fd < 0) throw Error({path, 0, 0}, std::string("cannot open the file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw Error({path, 0, 0}, std::string("cannot read the file: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error({path, 0, 0}, "not a regular file: a safetensors file's size must be known");
  SafetensorsFile f;
  f.file = path;
  f.file_bytes = st.st_size;
  const std::string length = read_at(file.fd, 0, 8, path);
  if (length.size() < 8)
    throw Error({path, 1, 1}, "expected 8 bytes of header length, found a file of " + with_commas(f.file_bytes) + " bytes");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(length[static_cast<std::size_t>(i)]);
  if (n < 2 || n > static_cast<std::uint64_t>(kMaxHeader))
    throw Error({path, 1, 1}, "the header length is " + with_commas(static_cast<long long>(std::min<std::uint64_t>(n, 1ULL << 62))) +
                                  " bytes; a safetensors header is 2 to " + with_commas(kMaxHeader) + " bytes of JSON");
  f.header_bytes = static_cast<std::int64_t>(n);
  if (f.header_bytes > f.file_bytes - 8)
    throw Error({path, 1, 1}, "the header is " + with_commas(f.header_bytes) + " bytes, but the file has only " +
                                  with_commas(f.file_bytes - 8) + " after its 8 bytes of length");
  const std::string header = read_at(file.fd, 8, f.header_bytes, path);
  const SourcePath where(path);  // one handle for every tensor's location
  if (header.front() != '{') throw Error(at_byte(where, 0), "the header must be a JSON object, starting with '{'");
  if (!nlohmann::json::accept(header)) {
    try {
      const nlohmann::json unread = nlohmann::json::parse(header);  // throws the error, located
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(at_byte(where, e.byte > 0 ? e.byte - 1 : 0), std::string("the header is not valid JSON: ") + e.what());
    }
  }
  // A name given twice is where it first is, with its last value (as a JSON object reads it).
  // (Parsed whole as an ordered_json, whose object finds each key it inserts by a linear
  // search, a header of 40,000 tensors took 46 s; finding each key's offset again from the
  // header's start was as slow.)
  std::vector<json_text::MemberText> members = json_text::members_of(header);
  std::vector<std::size_t> first;  // the members to read, each name's first
  std::unordered_map<std::string_view, std::size_t> index;  // name -> its first member
  for (std::size_t m = 0; m < members.size(); ++m) {
    const auto [it, fresh] = index.try_emplace(members[m].name, m);
    if (fresh) first.push_back(m);
    else members[it->second].value = members[m].value, members[it->second].end = members[m].end;
  }
  for (const std::size_t m : first) {
    const std::string& name = members[m].name;
    const auto v = nlohmann::ordered_json::parse(std::string_view(header).substr(members[m].value, members[m].end - members[m].value));
    const SourceLoc loc = at_byte(where, members[m].key);
    if (name == "__metadata__") {
      if (!v.is_object()) throw Error(loc, "'__metadata__' must be an object of strings, found " + v.dump().substr(0, 80));
      for (const auto& [k, value] : v.items()) {
        if (!value.is_string()) throw Error(loc, "'__metadata__': '" + k + "' must be a string, found " + value.dump().substr(0, 80));
        f.metadata[k] = value.get<std::string>();
      }
      continue;
    }
    f.tensors.push_back(tensor_of(name, v, loc));
  }
  // The data: the tensors' spans tile it from 0 without gaps or overlaps, to the file's end.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : f.tensors) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return std::pair(a->begin, a->end) < std::pair(b->begin, b->end); });
  std::int64_t cursor = 0;
  for (const SafetensorsTensor* t : by_offset) {
    if (t->begin != cursor)
      throw Error(t->loc, "tensor '" + t->name + "': its data starts at " + with_commas(t->begin) + ", but the data before it ends at " +
                              with_commas(cursor) + (t->begin < cursor ? " (an overlap)" : " (a gap)"));
    cursor = t->end;
  }
  if (cursor != f.file_bytes - 8 - f.header_bytes)
    throw Error({path, 1, 1}, "the tensors' data is " + with_commas(cursor) + " bytes, but the file holds " +
                                  with_commas(f.file_bytes - 8 - f.header_bytes) + " after its header (truncated, or not safetensors)");
  f.data_bytes = cursor;
  // Totals, by dtype.
  std::map<std::string, SafetensorsDtype> dtypes;
  for (const auto& t : f.tensors) {
    SafetensorsDtype& d = dtypes[t.dtype];
    d.dtype = t.dtype;
    ++d.tensors;
    d.elements = checked_add(d.elements, t.numel());
    d.bytes = checked_add(d.bytes, t.end - t.begin);
    f.elements = checked_add(f.elements, t.numel());
  }
  for (auto& [name, d] : dtypes) f.by_dtype.push_back(std::move(d));
  std::stable_sort(f.by_dtype.begin(), f.by_dtype.end(), [](const SafetensorsDtype& a, const SafetensorsDtype& b) {
    return safetensors_dtype_size(a.dtype) > safetensors_dtype_size(b.dtype);
  });
  return f;
}

}  // namespace nnmem
