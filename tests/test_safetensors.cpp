// safetensors headers against files the safetensors library wrote (validation/
// safetensors_headers.py, committed as validation/safetensors_headers.json): each header is
// written in front of zeros of the file's length, and nnmem must read what the library read
// back, and name every tensor of the network's spec as PyTorch's state_dict does.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/safetensors.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// A file of `header` after its 8-byte length, then zeros up to `file_bytes` (or no more data).
std::string write_file(const std::string& name, const std::string& header, std::int64_t file_bytes = -1) {
  const std::string path = (std::filesystem::temp_directory_path() / ("nnmem_test_" + name + ".safetensors")).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const auto n = static_cast<std::uint64_t>(header.size());
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i) & 0xff));
  out << header;
  out.close();
  if (file_bytes >= 0) std::filesystem::resize_file(path, static_cast<std::uintmax_t>(file_bytes));
  return path;
}

std::string error_of(const std::string& header, std::int64_t data_bytes = 0) {
  const std::string path = write_file("bad", header, 8 + static_cast<std::int64_t>(header.size()) + data_bytes);
  try {
    read_safetensors(path);
  } catch (const Error& e) {
    const std::string text = e.format();
    return text.rfind(path + ":", 0) == 0 ? text.substr(path.size() + 1) : text;
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors headers read as the library reads them, on every validation network") {
  const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(source_path("validation/safetensors_headers.json")));
  const std::set<std::string> listed = listed_networks("validation/checkpoint_not_modelled.json");
  int networks = 0;
  for (const auto& [name, measured] : fixture["networks"].items()) {
    CAPTURE(name);
    const std::string path = write_file(name, measured["header"], measured["file_bytes"]);
    const SafetensorsFile f = read_safetensors(path);
    CHECK(f.file_bytes == measured["file_bytes"].get<std::int64_t>());
    REQUIRE(f.tensors.size() == measured["tensors"].size());
    std::map<std::string, const SafetensorsTensor*> read;  // safe_open lists the keys sorted; the header by dtype first
    for (const auto& t : f.tensors) read[t.name] = &t;
    std::int64_t elements = 0;
    for (const auto& m : measured["tensors"]) {
      CAPTURE(m["name"].get<std::string>());
      REQUIRE(read.count(m["name"]));
      const SafetensorsTensor& t = *read[m["name"]];
      CHECK(t.dtype == m["dtype"].get<std::string>());
      CHECK(t.shape == m["shape"].get<Shape>());
      elements += m["elements"].get<std::int64_t>();
    }
    CHECK(f.elements == elements);
    CHECK(f.by_dtype.size() == measured["by_dtype"].size());
    for (const auto& d : f.by_dtype) {
      CAPTURE(d.dtype);
      CHECK(d.tensors == measured["by_dtype"][d.dtype]["tensors"].get<std::int64_t>());
      CHECK(d.elements == measured["by_dtype"][d.dtype]["elements"].get<std::int64_t>());
      CHECK(d.bytes == measured["by_dtype"][d.dtype]["bytes"].get<std::int64_t>());
    }
    CHECK(f.data_bytes + f.header_bytes + 8 == f.file_bytes);
    // The spec names every parameter and buffer as PyTorch does, with its shape and dtype.
    const auto diffs = compare_tensors(build_graph(validation_network(name)), f);
    if (!listed.count(name))  // not those whose names the spec does not give yet (validation/checkpoint_not_modelled.json)
      for (const auto& d : diffs) FAIL_CHECK(d.name << ": spec " << d.spec << ", file " << d.file);
    std::filesystem::remove(path);
    ++networks;
  }
  CHECK(networks >= 52);
}

TEST_CASE("safetensors: a spec that differs from the file lists every difference") {
  const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(source_path("validation/safetensors_headers.json")));
  const auto& lenet = fixture["networks"]["lenet5"];
  const SafetensorsFile f = read_safetensors(write_file("lenet5", lenet["header"], lenet["file_bytes"]));
  // lenet5's spec in bfloat16: every tensor differs by dtype only.
  GraphOptions o;
  o.float_dtype = DType::BFloat16;
  const auto diffs = compare_tensors(build_graph(validation_network("lenet5"), o), f);
  REQUIRE(diffs.size() == f.tensors.size());
  for (const auto& d : diffs) {
    CHECK(d.kind == TensorDifference::Kind::Dtype);
    CHECK(d.file.find("F32") != std::string::npos);
    CHECK(d.spec.find("BF16") != std::string::npos);
  }
  const Graph other = graph_from("inputs: {x: [1, 32, 32]}\nlayers:\n"
                                 "  - {name: conv1, type: Conv2d, out_channels: 8, kernel_size: 5}\n"
                                 "  - {name: extra, type: Conv2d, out_channels: 4, kernel_size: 1}\n");
  const auto d2 = compare_tensors(other, f);
  int shape = 0, only_file = 0, only_spec = 0;
  for (const auto& d : d2) {
    shape += d.kind == TensorDifference::Kind::Shape;
    only_file += d.kind == TensorDifference::Kind::OnlyInFile;
    only_spec += d.kind == TensorDifference::Kind::OnlyInSpec;
  }
  CHECK(shape == 2);  // conv1.weight and conv1.bias: 8 channels, not lenet5's 6
  CHECK(only_file == static_cast<int>(f.tensors.size()) - 2);
  CHECK(only_spec == 2);  // extra.weight, extra.bias
}

TEST_CASE("safetensors: a bad header is an error located in the file, naming the tensor and field") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  CHECK(error_of(ok, 24).empty());
  CHECK(error_of(ok, 20) == "1:1: error: the tensors' data is 24 bytes, but the file holds 20 after its header (truncated, or not safetensors)");
  CHECK(error_of(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8).find(
            "1:10: error: tensor 'a': 'dtype' must be one of F64, I64") != std::string::npos);
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", 8).find(
            "tensor 'a': 'shape' must be sizes from 0 to") != std::string::npos);
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8) ==
        "1:10: error: tensor 'a': shape [3] of F32 is 12 bytes, but data_offsets [0, 8] span 8");
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)
            .find("tensor 'b': its data starts at 4, but the data before it ends at 8 (an overlap)") != std::string::npos);
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", 8).find("unknown field 'extra'") != std::string::npos);
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8).find("the header is not valid JSON") != std::string::npos);
  CHECK(error_of(R"({"__metadata__":{"format":1}})").find("'__metadata__': 'format' must be a string") != std::string::npos);
  CHECK(error_of("[1, 2]").find("the header must be a JSON object") != std::string::npos);
  // Lengths that cannot be: beyond the file, beyond the library's limit.
  const std::string path = write_file("short", "{}");
  std::filesystem::resize_file(path, 5);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("expected 8 bytes of header length, found a file of 5 bytes"), Error);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>(0xff));
  }
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("a safetensors header is 2 to 100,000,000 bytes"), Error);
  CHECK_THROWS_WITH_AS(read_safetensors(source_path("validation")), doctest::Contains("not a regular file"), Error);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: the header read in one pass, each tensor where its name is, whatever the text holds") {
  // The tensors in the text's order, each located at its key (line 1, the column counted from
  // the file's start): a name written with escapes, braces and commas inside strings, spaces
  // between the tokens, and a name given twice (where it first is, with its last value).
  const std::string header =
      R"({ "__metadata__" : {"note": "a } b, \"c\": {"} ,)"
      R"( "b\u0041" : {"dtype":"F32","shape":[2],"data_offsets":[0,8]} ,)"
      R"("x":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},)"
      R"("a,}":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("x":{"dtype":"F32","shape":[1],"data_offsets":[12,16]} })";
  const SafetensorsFile f = read_safetensors(write_file("one_pass", header, 8 + static_cast<std::int64_t>(header.size()) + 16));
  REQUIRE(f.tensors.size() == 3);
  CHECK(f.metadata.at("note") == "a } b, \"c\": {");
  CHECK(f.tensors[0].name == "bA");
  CHECK(f.tensors[0].loc.column == 9 + static_cast<int>(header.find("\"b\\u0041\"")));
  CHECK(f.tensors[1].name == "x");
  CHECK(f.tensors[1].dtype == "F32");  // the last value ...
  CHECK(f.tensors[1].loc.column == 9 + static_cast<int>(header.find("\"x\"")));  // ... where the name first is
  CHECK(f.tensors[2].name == "a,}");
  CHECK(f.tensors[2].begin == 8);
  CHECK(f.data_bytes == 16);
}
