// `nnmem checkpoint`: the weights alone and a training checkpoint, file by file and component by
// component, as a table, markdown, CSV or JSON.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "nnmem/checkpoint.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"
#include "text_table.hpp"

namespace nnmem {

namespace {

using report::TextTable;

std::string format_name(const CheckpointOptions& o) {
  switch (o.format) {
    case CheckpointFormat::Torch: return "torch.save (PyTorch " + std::string(o.torch->version) + ")";
    case CheckpointFormat::Safetensors: return "safetensors";
    case CheckpointFormat::TensorFlow: return "TensorFlow checkpoint (modelled)";
  }
  return {};
}

// "39.30 MB": decimal megabytes, as file managers and the seed's question count them.
std::string decimal_mb(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

std::string ratio(std::int64_t a, std::int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", b ? static_cast<double>(a) / static_cast<double>(b) : 0.0);
  return buf;
}

// Both checkpoints, file by file: a row per file, then its parts.
TextTable rows(const CheckpointSizes& c, bool raw) {
  TextTable t;
  t.column("checkpoint", TextTable::Align::Left);
  t.column("file / component", TextTable::Align::Left);
  t.column("bytes");
  if (!raw) t.column("size");
  t.column("kind", TextTable::Align::Left);
  const auto add = [&](const char* which, const Checkpoint& ck) {
    for (const CheckpointFile& f : ck.files) {
      std::vector<std::string> row = {which, f.name, raw ? std::to_string(f.bytes) : with_commas(f.bytes)};
      if (!raw) row.push_back(human_bytes(f.bytes));
      row.push_back(f.modelled ? "file (modelled)" : "file");
      t.row(std::move(row));
      for (const CheckpointPart& p : f.parts) {
        std::vector<std::string> part = {which, raw ? p.name : "  " + p.name, raw ? std::to_string(p.bytes) : with_commas(p.bytes)};
        if (!raw) part.push_back(human_bytes(p.bytes));
        part.push_back(p.overhead ? "container" : "tensors");
        t.row(std::move(part));
      }
    }
  };
  add("weights", c.weights);
  t.rule();
  add("training", c.training);
  return t;
}

std::string optimizer_words(const CheckpointSizes& c) {
  return c.options.optimizer == OptimizerKind::None ? "no optimizer" : std::string(name_of(c.options.optimizer)) + "'s state after a step";
}

// "39,295,640 bytes, 39.30 MB": exact, and in the decimal megabytes file managers show.
std::string exact(std::int64_t bytes) { return human_bytes(bytes) + " (" + with_commas(bytes) + " bytes, " + decimal_mb(bytes) + ")"; }

std::string headline(const CheckpointSizes& c, const std::string& bullet) {
  const Checkpoint &w = c.weights, &t = c.training;
  return bullet + c.model + ": " + format_name(c.options) + ", " + with_commas(c.tensors) + " tensors\n" + bullet +
         "Tensors: weights " + exact(w.tensor_bytes) + "; with " + optimizer_words(c) + " " + exact(t.tensor_bytes) + ", " +
         ratio(t.tensor_bytes, w.tensor_bytes) + " the weights\n" + bullet + "On disk: " + exact(w.bytes) + " and " + exact(t.bytes) +
         ", the container's bytes included\n";
}

}  // namespace

std::string render_table(const CheckpointSizes& c) { return headline(c, "") + "\n" + rows(c, false).text(); }
std::string render_markdown(const CheckpointSizes& c) { return headline(c, "- ") + "\n" + rows(c, false).markdown(); }
std::string render_csv(const CheckpointSizes& c) { return rows(c, true).csv(); }

std::string render_json(const CheckpointSizes& c, int indent) {
  using nlohmann::ordered_json;
  const auto checkpoint = [](const Checkpoint& ck) {
    ordered_json files = ordered_json::array();
    for (const CheckpointFile& f : ck.files) {
      ordered_json parts = ordered_json::array();
      for (const CheckpointPart& p : f.parts) parts.push_back({{"name", p.name}, {"bytes", p.bytes}, {"overhead", p.overhead}});
      files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"modelled", f.modelled}, {"parts", parts}});
    }
    return ordered_json{{"bytes", ck.bytes}, {"tensor_bytes", ck.tensor_bytes}, {"files", files}};
  };
  const CheckpointOptions& o = c.options;
  ordered_json j;
  j["schema_version"] = kJsonSchemaVersion;
  j["model"] = c.model;
  j["checkpoint"] = {
      {"format", o.format == CheckpointFormat::Torch ? "torch" : o.format == CheckpointFormat::Safetensors ? "safetensors" : "tf"},
      {"torch", std::string(o.torch->version)},
      {"optimizer", name_of(o.optimizer)},
      {"tensors", c.tensors},
      {"weights", checkpoint(c.weights)},
      {"training", checkpoint(c.training)},
  };
  return j.dump(indent);
}

}  // namespace nnmem
