// A .safetensors file's header, read without its data: what tensors it holds, their dtypes and
// shapes, and the parameters and bytes they add up to — exact for any model, even one no spec
// describes. Given a built graph, the differences between its state_dict and the file's tensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nnmem/diagnostic.hpp"
#include "nnmem/graph.hpp"

namespace nnmem {

/// One tensor of the header: "name": {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;          // as the file spells it: "F32", "BF16", "I64", …
  Shape shape;
  std::int64_t begin = 0, end = 0;  // data_offsets, relative to the end of the header
  SourceLoc loc;              // where its key is in the file (line 1, the byte's column)
  std::int64_t numel() const { return nnmem::numel(shape); }
};

/// What one dtype adds up to in the file.
struct SafetensorsDtype {
  std::string dtype;
  std::int64_t tensors = 0, elements = 0, bytes = 0;
};

struct SafetensorsFile {
  std::string file;
  std::int64_t file_bytes = 0;     // the file's size
  std::int64_t header_bytes = 0;   // the JSON header's length (the 8 bytes before it aside)
  std::vector<SafetensorsTensor> tensors;            // in the header's order
  std::map<std::string, std::string> metadata;       // "__metadata__" ({"format": "pt"})
  std::vector<SafetensorsDtype> by_dtype;            // widest element first, then by name
  std::int64_t elements = 0;       // every tensor's elements: the parameters (and buffers) saved
  std::int64_t data_bytes = 0;     // the tensor data
};

/// Reads `path`'s header (8 bytes of length, then that much JSON) and checks it as the
/// safetensors library does: known dtypes, shapes whose bytes are their offsets' span, offsets
/// that tile the data without gaps or overlaps, a data section as long as the file holds. Never
/// reads the data. Throws nnmem::Error located in the file (line 1, the byte's column: the header
/// follows 8 binary bytes) naming the tensor and field.
SafetensorsFile read_safetensors(const std::string& path);

/// The bytes of one element of a safetensors dtype ("F32" -> 4), or 0 for an unknown one.
std::int64_t safetensors_dtype_size(const std::string& dtype);

/// A difference between a spec's state_dict and a file's tensors.
struct TensorDifference {
  enum class Kind { OnlyInSpec, OnlyInFile, Shape, Dtype };
  Kind kind;
  std::string name;
  std::string spec, file;  // "[64, 3, 7, 7] float32", as each side has it ("" when absent)
};

/// Every difference between `graph`'s state_dict (checkpoint.hpp's names) and the file's
/// tensors, by name: missing on either side, another shape, another dtype (a file saved in
/// another precision than the spec trains in differs only by dtype). In the file's order, then
/// the spec's.
std::vector<TensorDifference> compare_tensors(const Graph& graph, const SafetensorsFile& file);

/// compare_tensors()'s answer, with the spec it was asked about (for reports).
struct TensorComparison {
  std::string spec;  // its file
  std::vector<TensorDifference> differences;
};

}  // namespace nnmem
