// A Hugging Face config.json translated into an nnmem spec: `model_type` and the model class
// (`architectures[0]`) choose a family template — the examples' gpt2, llama, bert_base and
// vit_b16 specs, whose variables are the config classes' keys — and the config's values become
// those variables. An importer writes a spec, never estimates: the spec is then loaded like any.
#pragma once

#include <string>
#include <vector>

namespace nnmem {

struct ImportedSpec {
  std::string text;          // the spec (YAML): the template with the config's values
  std::string model_type;    // "llama"
  std::string architecture;  // "LlamaForCausalLM"
  std::string storage_dtype; // torch_dtype as the config gives it ("" when absent): how the checkpoint is stored
  std::vector<std::string> notes;  // assumptions worth a user's attention (a sliding window not modelled, …)
};

/// Whether `path` names a Hugging Face config (a .json file) rather than a spec.
bool is_hf_config(const std::string& path);

/// Reads a config.json and translates it. `architecture`, when not empty, replaces
/// architectures[0] (`BertModel` for a checkpoint saved as BertForMaskedLM). Throws nnmem::Error
/// located in the JSON (`file:line:column`) naming the field: an unsupported model_type or
/// class (listing the supported ones), a missing size, a value of the wrong type or out of range.
ImportedSpec import_hf_config(const std::string& path, const std::string& architecture = "");
/// The same for text already in memory; `file` is used in locations.
ImportedSpec import_hf_config_text(const std::string& text, const std::string& file, const std::string& architecture = "");

/// "gpt2: GPT2LMHeadModel", one line per supported model_type.
std::vector<std::string> supported_hf_models();

}  // namespace nnmem
