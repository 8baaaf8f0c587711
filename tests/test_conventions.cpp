// The published estimators nnmem reproduces: DeepSpeed's ZeRO-2 and ZeRO-3 model-state figures
// against what DeepSpeed's own functions return (validation/deepspeed_estimates.py ran them on the
// validation networks: validation/deepspeed_estimates.json), and Megatron-LM's theoretical memory
// figures with Korthikanti et al.'s activation formulas.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/parallel.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("--convention deepspeed: DeepSpeed's ZeRO-2 and ZeRO-3 estimates, exactly, for 4 models x 6 GPU setups") {
  const nlohmann::json ds = nlohmann::json::parse(std::ifstream(source_path("validation/deepspeed_estimates.json")));
  std::size_t checked = 0;
  for (const auto& m : ds["models"]) {
    const std::string network = m["network"];
    CAPTURE(network);
    const Estimate e = estimate_file("examples/" + network + ".yaml");
    std::map<std::pair<std::int64_t, std::int64_t>, DeepSpeedConvention> by_setup;
    const auto convention = [&](std::int64_t gpus, std::int64_t nodes) -> const DeepSpeedConvention& {
      auto it = by_setup.find({gpus, nodes});
      if (it != by_setup.end()) return it->second;
      ParallelOptions p;
      p.gpus = gpus;
      p.nodes = nodes;
      return by_setup[{gpus, nodes}] = deepspeed_convention(e, p);
    };
    const DeepSpeedConvention& one = convention(1, 1);
    CHECK(one.total_params == m["total_params"].get<std::int64_t>());
    CHECK(one.largest_layer_params == m["largest_layer_params"].get<std::int64_t>());
    for (const char* stage : {"zero2", "zero3"})
      for (const auto& want : m[stage]) {
        const std::int64_t gpus = want["gpus"], nodes = want["nodes"];
        CAPTURE(stage);
        CAPTURE(gpus);
        CAPTURE(nodes);
        CAPTURE(want.dump());
        const DeepSpeedConvention& c = convention(gpus, nodes);
        const bool zero3 = std::string(stage) == "zero3";
        const auto got = std::find_if(c.figures.begin(), c.figures.end(), [&](const DeepSpeedFigure& f) {
          return f.stage == (zero3 ? 3 : 2) && f.offload_optimizer == want["offload_optimizer"].get<bool>() &&
                 (!zero3 || (f.offload_param == want["offload_param"].get<bool>() && f.zero_init == want["zero_init"].get<bool>()));
        });
        REQUIRE(got != c.figures.end());
        CHECK(got->cpu_bytes == want["cpu_bytes"].get<std::int64_t>());
        CHECK(got->gpu_bytes == want["gpu_bytes"].get<std::int64_t>());
        ++checked;
      }
  }
  CHECK(checked == 4 * 6 * (2 + 6));
}

TEST_CASE("DeepSpeed's options read as it prints them") {
  CHECK(deepspeed_zero2(1000, 1, 1, true).options() == "offload_optimizer=cpu");
  CHECK(deepspeed_zero3(1000, 10, 1, 1, true, false, true).options() == "offload_param=none, offload_optimizer=cpu, zero_init=1");
  // A billion parameters on 8 GPUs: ZeRO-2 without offload, 2 + 18/8 bytes per parameter.
  CHECK(deepspeed_zero2(1'000'000'000, 8, 1, false).gpu_bytes == 4'250'000'000);
  CHECK_THROWS_AS(deepspeed_zero2(std::int64_t{1} << 50, 8, 1, false), SizeError);
}

namespace {

TransformerShape llama2_7b() {
  TransformerShape m;
  m.hidden = 4096;
  m.layers = 32;
  m.heads = 32;
  m.kv_channels = 128;
  m.ffn_hidden = 11008;
  m.vocab = 32000;
  m.swiglu = m.rmsnorm = m.untied = true;
  return m;
}

std::string mb(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

TEST_CASE("--convention megatron: LLaMA-2-7B at sequence 4096, Megatron-LM's theoretical memory exactly") {
  MegatronSetup s;
  s.seq = 4096;
  const MegatronMemory m = megatron_theoretical_memory(llama2_7b(), s);
  CHECK(m.total_parameters == 6'738'415'616.0);
  CHECK(m.weight_and_optimizer_bytes == 18.0 * 6'738'415'616);  // 18 bytes a parameter, no sharding
  CHECK(mb(m.weight_and_optimizer_mb()) == "115672.57");
  CHECK_FALSE(m.sequence_parallel_formula);
  // 32 layers x s·b·h·34 (10 + 24/t at t = 1), the embedding's input and dropout, logits and the
  // final norm's output at 2 bytes, and 5 % more.
  CHECK(m.activation_bytes == 19'494'425'395.2);
  CHECK(mb(m.activation_mb()) == "18591.33");
}

TEST_CASE("--convention megatron: every figure Megatron-LM's own code gave, for 4 shapes x 5 parallel setups") {
  const nlohmann::json mg = nlohmann::json::parse(std::ifstream(source_path("validation/megatron_estimates.json")));
  std::size_t checked = 0;
  for (const auto& r : mg["runs"]) {
    CAPTURE(r["shape"].get<std::string>());
    CAPTURE(r["tp"].get<int>());
    CAPTURE(r["pp"].get<int>());
    TransformerShape m;
    m.hidden = r["hidden_size"];
    m.layers = r["num_layers"];
    m.heads = r["num_attention_heads"];
    m.kv_channels = r["kv_channels"];
    m.ffn_hidden = r["ffn_hidden_size"];
    m.vocab = r["padded_vocab_size"];
    if (r["group_query_attention"].get<bool>()) m.query_groups = r["num_query_groups"];
    m.swiglu = r["swiglu"];
    m.rmsnorm = r["normalization"] == "RMSNorm";
    m.untied = r["untie_embeddings_and_output_weights"];
    MegatronSetup s;
    s.seq = r["seq_length"];
    s.micro_batch = r["micro_batch"];
    s.tp = r["tp"];
    s.pp = r["pp"];
    s.dp = r["dp"];
    if (!r["vpp"].is_null()) s.vpp = r["vpp"].get<std::int64_t>();
    if (!r["num_microbatches"].is_null()) s.num_microbatches = r["num_microbatches"].get<std::int64_t>();
    s.distributed_optimizer = r["distributed_optimizer"];
    s.sequence_parallel = s.selective_recompute = r["sequence_parallel_selective"];
    const MegatronMemory got = megatron_theoretical_memory(m, s);
    CHECK(got.weight_and_optimizer_mb() == r["weight_and_optimizer_mb"].get<double>());
    CHECK(got.activation_mb() == r["activation_mb"].get<double>());
    CHECK(got.weight_and_optimizer_mb() + got.activation_mb() == r["total_mb"].get<double>());
    ++checked;
  }
  CHECK(checked == 4 * 5);
}

TEST_CASE("Korthikanti et al.'s activations per layer: LLaMA-2-7B's shape at sequence 4096, term by term") {
  const std::int64_t s = 4096, b = 1, h = 4096, a = 32;
  const double sbh = 16'777'216;  // s·b·h
  // No parallelism: 34 s·b·h + 5 a s² b (the attention scores, softmax, its dropout mask and output).
  CHECK(korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::None) == sbh * (34 + 160));
  // Tensor parallel over 2: 10 s·b·h whole, 24 s·b·h and the attention core split.
  CHECK(korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::None) == sbh * (10 + 12 + 80));
  // Sequence parallel too: all of it split.
  CHECK(korthikanti_layer_bytes(s, b, h, a, 2, true, Recompute::None) == sbh * 194 / 2);
  // Selective recomputation drops the attention core.
  CHECK(korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::Selective) == sbh * 22);
  CHECK(korthikanti_layer_bytes(s, b, h, a, 2, true, Recompute::Selective) == sbh * 17);
  // Full recomputation keeps the layer's input.
  CHECK(korthikanti_layer_bytes(s, b, h, a, 8, true, Recompute::Full) == 2 * sbh);
  CHECK_THROWS_AS(korthikanti_layer_bytes(s, 0, h, a, 1, false, Recompute::None), Error);
}
