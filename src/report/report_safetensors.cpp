// `nnmem inspect FILE.safetensors`: what the file holds, by dtype, and with a spec the
// differences between its state_dict and the file's tensors; as a table or JSON.
#include <nlohmann/json.hpp>
#include <sstream>

#include "nnmem/report.hpp"
#include "nnmem/safetensors.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {

const char* kind_name(TensorDifference::Kind k) {
  switch (k) {
    case TensorDifference::Kind::OnlyInSpec: return "only in the spec";
    case TensorDifference::Kind::OnlyInFile: return "only in the file";
    case TensorDifference::Kind::Shape: return "shape differs";
    case TensorDifference::Kind::Dtype: return "dtype differs";
  }
  return "";
}

}  // namespace

std::string render_table(const SafetensorsFile& f, const std::optional<TensorComparison>& against) {
  std::ostringstream os;
  os << f.file << ": " << with_commas(static_cast<long long>(f.tensors.size())) << " tensors, " << with_commas(f.elements)
     << " elements (parameters and buffers), " << human_bytes_exact(f.data_bytes) << " of tensor data\n";
  os << "File " << human_bytes_exact(f.file_bytes) << ": 8 bytes of length, a JSON header of " << with_commas(f.header_bytes)
     << " bytes, the data\n";
  if (!f.metadata.empty()) {
    os << "Metadata:";
    for (const auto& [k, v] : f.metadata) os << ' ' << k << '=' << v;
    os << '\n';
  }
  report::TextTable t;
  t.column("dtype", report::TextTable::Align::Left);
  t.column("tensors");
  t.column("elements");
  t.column("bytes");
  t.column("size");
  for (const auto& d : f.by_dtype)
    t.row({d.dtype, with_commas(d.tensors), with_commas(d.elements), with_commas(d.bytes), human_bytes(d.bytes)});
  os << '\n' << t.text();
  if (against) {
    const auto& diffs = against->differences;
    os << "\nAgainst " << against->spec << ": ";
    if (diffs.empty()) {
      os << "every tensor matches by name, shape and dtype (" << with_commas(static_cast<long long>(f.tensors.size())) << ")\n";
    } else {
      os << with_commas(static_cast<long long>(diffs.size())) << " difference" << (diffs.size() == 1 ? "" : "s") << "\n\n";
      report::TextTable d;
      d.column("tensor", report::TextTable::Align::Left);
      d.column("difference", report::TextTable::Align::Left);
      d.column("in the spec", report::TextTable::Align::Left);
      d.column("in the file", report::TextTable::Align::Left);
      for (const auto& x : diffs) d.row({x.name, kind_name(x.kind), x.spec.empty() ? "--" : x.spec, x.file.empty() ? "--" : x.file});
      os << d.text();
    }
  }
  return os.str();
}

std::string render_json(const SafetensorsFile& f, const std::optional<TensorComparison>& against, int indent) {
  nlohmann::ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["file"] = f.file;
  j["file_bytes"] = f.file_bytes;
  j["header_bytes"] = f.header_bytes;
  j["data_bytes"] = f.data_bytes;
  j["tensors"] = f.tensors.size();
  j["elements"] = f.elements;
  j["metadata"] = f.metadata;
  j["by_dtype"] = nlohmann::ordered_json::array();
  for (const auto& d : f.by_dtype)
    j["by_dtype"].push_back({{"dtype", d.dtype}, {"tensors", d.tensors}, {"elements", d.elements}, {"bytes", d.bytes}});
  if (against) {
    nlohmann::ordered_json c;
    c["spec"] = against->spec;
    c["matches"] = against->differences.empty();
    c["differences"] = nlohmann::ordered_json::array();
    for (const auto& x : against->differences)
      c["differences"].push_back({{"tensor", x.name}, {"kind", kind_name(x.kind)}, {"spec", x.spec}, {"file", x.file}});
    j["against"] = c;
  } else {
    j["against"] = nullptr;
  }
  return j.dump(indent);
}

}  // namespace nnmem
