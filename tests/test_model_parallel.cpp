// Tensor and pipeline parallelism (docs/parallel.md): one rank's spec and each stage's step,
// checked against Megatron-LM's parameter count and Korthikanti et al.'s activation formulas
// term by term, the schedules' micro-batches in flight, and every error. Modelled: no GPU
// cluster here to measure them.
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "nnmem/parallel.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {

// A GPT layer as Korthikanti et al. count it: LayerNorm, fused QKV, attention with its softmax
// kept (kernel math) and dropout, output projection, dropout, LayerNorm, 4h GELU MLP, dropout;
// float16. s = 128, b = 1, h = 256, a = 8.
constexpr const char* kGpt = R"(
name: gpt_block
dtype: float16
variables: {h: 256, a: 8, s: 128, layers: 2, p: 0.1}
inputs:
  x: {shape: [$s, $h], dtype: float16}
blocks:
  Block:
    layers:
      - {name: ln_1, type: LayerNorm, normalized_shape: $h}
      - {name: qkv, type: Linear, out_features: $3 * $h}
      - {name: split, type: Split, split_size_or_sections: $h, dim: 2, functional: true}
      - {name: q, type: View, input: split, shape: [-1, $a, $h / $a], functional: true}
      - {name: q_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: k, type: View, input: "split:1", shape: [-1, $a, $h / $a], functional: true}
      - {name: k_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: v, type: View, input: "split:2", shape: [-1, $a, $h / $a], functional: true}
      - {name: v_t, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: core, type: ScaledDotProductAttention, inputs: [q_t, k_t, v_t], dropout_p: $p, kernel: math, functional: true}
      - {name: merge, type: Transpose, dim0: 1, dim1: 2, functional: true}
      - {name: contiguous, type: Contiguous, functional: true}
      - {name: reshape, type: View, shape: [-1, $h], functional: true}
      - {name: proj, type: Linear, out_features: $h}
      - {name: drop_1, type: Dropout, p: $p}
      - {name: add_1, type: Add, inputs: [drop_1, in], functional: true}
      - {name: ln_2, type: LayerNorm, normalized_shape: $h}
      - {name: fc1, type: Linear, out_features: $4 * $h}
      - {name: gelu, type: GELU}
      - {name: fc2, type: Linear, out_features: $h}
      - {name: drop_2, type: Dropout, p: $p}
      - {name: add_2, type: Add, inputs: [drop_2, add_1], functional: true}
layers:
  - {name: layers, block: Block, inputs: [x], repeat: $layers}
)";

ModelSpec gpt(std::int64_t layers) {
  LoadOptions o;
  o.overrides = {{"layers", std::to_string(layers)}};
  return parse_spec(kGpt, "gpt.yaml", o);
}

ModelParallelOptions mp_of(std::int64_t t, std::int64_t p, PipelineSchedule schedule = PipelineSchedule::OneFOneB, std::int64_t v = 1,
                           std::vector<std::int64_t> stages = {}) {
  ModelParallelOptions m;
  m.tp = t;
  m.pp = p;
  m.schedule = schedule;
  m.virtual_stages = v;
  m.stages = std::move(stages);
  return m;
}

MegatronSetup megatron(std::int64_t t, std::int64_t p) {
  MegatronSetup s;
  s.seq = 32;
  s.tp = t;
  s.pp = p;
  return s;
}

ModelParallelEstimate run(const ModelSpec& spec, ModelParallelOptions mp, std::int64_t micro_batches = 1,
                          CheckpointSegments checkpoint = CheckpointSegments::None) {
  EstimateOptions o;
  o.graph.torch = find_torch_profile("2.13");
  o.step.grad_accum = micro_batches;
  o.step.checkpoint.segments = checkpoint;
  return estimate_model_parallel(spec, o, mp);
}

ModelParallelOptions tp(std::int64_t t, bool sequence_parallel = false) {
  ModelParallelOptions m = mp_of(t, 1);
  m.sequence_parallel = sequence_parallel;
  return m;
}

// One layer's activations on a rank: what a micro-batch's forward holds with two layers, less with one.
std::int64_t layer_bytes(std::int64_t t, CheckpointSegments checkpoint, bool sequence_parallel = false) {
  return run(gpt(2), tp(t, sequence_parallel), 1, checkpoint).stages[0].held_bytes -
         run(gpt(1), tp(t, sequence_parallel), 1, checkpoint).stages[0].held_bytes;
}

std::string error_of(const ModelSpec& spec, const ModelParallelOptions& mp) {
  try {
    run(spec, mp);
  } catch (const Error& e) {
    return e.format();
  }
  return "";
}

ModelSpec llama(std::int64_t layers) {
  LoadOptions o;
  o.overrides = {{"hidden_size", "64"}, {"intermediate_size", "160"}, {"num_hidden_layers", std::to_string(layers)},
                 {"num_attention_heads", "4"}, {"num_key_value_heads", "4"}, {"vocab_size", "256"}, {"seq_len", "32"}};
  return load_spec_file(source_path("examples/llama.yaml"), o);
}

}  // namespace

TEST_CASE("--tp: a GPT layer's activations against Korthikanti et al.'s formulas, term by term") {
  const std::int64_t s = 128, b = 1, h = 256, a = 8, sbh = s * b * h;
  const std::int64_t ln_stats = 2 * 2 * s * b * 2;  // two LayerNorms' mean and rstd, s·b float16 values each
  // Without recomputation nnmem keeps 4 s·b·h more than 34 s·b·h + 5 a s² b: the math kernel's
  // q and k, each multiplied by √scale, are new tensors its matmul keeps (the formula counts q and
  // k once, nnmem the fused QKV output through v's view and the scaled copies); split by t.
  CHECK(layer_bytes(1, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::None) + 4 * sbh + ln_stats);
  CHECK(layer_bytes(2, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::None) + 4 * sbh / 2 + ln_stats);
  CHECK(layer_bytes(4, CheckpointSegments::None) == korthikanti_layer_bytes(s, b, h, a, 4, false, Recompute::None) + 4 * sbh / 4 + ln_stats);
  // Selective recomputation keeps the core's inputs q, k, v only: the formula's 34 s·b·h exactly.
  CHECK(layer_bytes(1, CheckpointSegments::Selective) == korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::Selective) + ln_stats);
  CHECK(layer_bytes(2, CheckpointSegments::Selective) == korthikanti_layer_bytes(s, b, h, a, 2, false, Recompute::Selective) + ln_stats);
}

TEST_CASE("--tp --sequence-parallel: Table 2's sequence-parallel and recomputation rows, term by term") {
  const std::int64_t s = 128, b = 1, h = 256, a = 8, sbh = s * b * h;
  const std::int64_t ln_stats = 2 * 2 * s * b * 2;
  for (std::int64_t t : {2, 4}) {
    CAPTURE(t);
    // Tensor + sequence parallel, s·b·h·(34/t + 5·a·s/(h·t)): every term split, the LayerNorms'
    // inputs, the dropout masks and the QKV and fc1 inputs too (each column-parallel Linear
    // keeps its sequence shard, not the gathered input); plus, as without sequence parallelism,
    // the math kernel's scaled q and k and the statistics, now of s/t rows.
    CHECK(layer_bytes(t, CheckpointSegments::None, true) ==
          korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::None) + 4 * sbh / t + ln_stats / t);
    // Tensor + sequence parallel + selective recomputation: s·b·h·34/t exactly, and the statistics.
    CHECK(layer_bytes(t, CheckpointSegments::Selective, true) ==
          korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::Selective) + ln_stats / t);
    // Full recomputation keeps the layer's input: 2·s·b·h whole on every rank (Table 2's row),
    // the rank's shard of it, 2·s·b·h/t, with sequence parallelism.
    CHECK(layer_bytes(t, CheckpointSegments::Blocks) == korthikanti_layer_bytes(s, b, h, a, t, false, Recompute::Full));
    CHECK(layer_bytes(t, CheckpointSegments::Blocks, true) == korthikanti_layer_bytes(s, b, h, a, t, true, Recompute::Full) / t);
  }
  // The parameters do not change: sequence parallelism splits activations only.
  CHECK(run(gpt(2), tp(2, true)).stages[0].params == run(gpt(2), tp(2)).stages[0].params);
}

TEST_CASE("--tp --sequence-parallel on LLaMA: the embeddings scattered, the stages sending the shard, the head gathering") {
  ModelParallelOptions m = mp_of(2, 2);
  m.sequence_parallel = true;
  const ModelParallelEstimate e = run(llama(4), m);
  const Estimate& first = e.stages[0].estimate;
  const auto scatter = std::find_if(first.layers.begin(), first.layers.end(), [](const LayerEstimate& l) {
    return l.type == "ScatterToSequenceParallelRegion";
  });
  REQUIRE(scatter != first.layers.end());
  CHECK(scatter->name == "model.embed_tokens.scatter_to_sequence_parallel_region");
  CHECK(to_string(scatter->outputs.front().shape) == "[1, 16, 64]");  // 32 tokens over 2 ranks
  CHECK(to_string(e.stages[1].estimate.inputs.front().type.shape) == "[1, 16, 64]");  // the stage receives the shard
  const Estimate& last = e.stages[1].estimate;
  const auto head = std::find_if(last.layers.begin(), last.layers.end(), [](const LayerEstimate& l) { return l.name == "lm_head"; });
  REQUIRE(head != last.layers.end());
  CHECK(head->type == "ColumnParallelLinear");
  CHECK(to_string(head->outputs.front().shape) == "[1, 32, 128]");  // every token, half the vocabulary
  ModelParallelOptions whole = mp_of(2, 2);
  CHECK(e.stages[0].held_bytes < run(llama(4), whole).stages[0].held_bytes);
  // Errors: without --tp, and a sequence the ranks do not divide.
  ModelParallelOptions no_tp = mp_of(1, 1);
  no_tp.sequence_parallel = true;
  CHECK(error_of(gpt(2), no_tp) == "gpt.yaml:1:1: error: --sequence-parallel splits the sequence over the tensor-parallel ranks: it "
                                   "needs --tp above 1, found --tp 1");
  LoadOptions o;
  o.overrides = {{"hidden_size", "64"}, {"intermediate_size", "160"}, {"num_hidden_layers", "2"}, {"num_attention_heads", "4"},
                 {"num_key_value_heads", "4"}, {"vocab_size", "256"}, {"seq_len", "30"}};
  CHECK(error_of(load_spec_file(source_path("examples/llama.yaml"), o), tp(4, true)).find(
            "error: --tp 4: RMSNorm 'model.layers.0.input_layernorm' reads 'model.embed_tokens' [1, 30, 64], which --sequence-parallel "
            "splits along its sequence (dimension 1): expected its length to divide by 4, found 30") != std::string::npos);
}

TEST_CASE("--tp --sequence-parallel on BERT: the pooler's first token read from the whole sequence, gathered") {
  const ModelParallelEstimate e = run(load_spec_file(source_path("examples/bert_base.yaml")), tp(2, true));
  const std::vector<LayerEstimate>& layers = e.stages[0].estimate.layers;
  const auto gather = std::find_if(layers.begin(), layers.end(), [](const LayerEstimate& l) { return l.type == "GatherFromSequenceParallelRegion"; });
  REQUIRE(gather != layers.end());
  CHECK(gather->name == "pooler.first_token.gather_from_sequence_parallel_region");
  CHECK(to_string(gather->outputs.front().shape) == "[1, 512, 768]");
  CHECK(std::next(gather)->name == "pooler.first_token");
  CHECK(std::count_if(layers.begin(), layers.end(), [](const LayerEstimate& l) { return l.type == "GatherFromSequenceParallelRegion"; }) == 1);
  CHECK(e.stages[0].held_bytes < run(load_spec_file(source_path("examples/bert_base.yaml")), tp(2)).stages[0].held_bytes);
  // A matrix product over the sequence gathers each shard it reads, each its own layer.
  const ModelSpec two = parse_spec(R"(
inputs: {x: [8, 16], y: [16, 8]}
layers:
  - {name: norm, type: LayerNorm, input: x, normalized_shape: 16}
  - {name: ny, type: LayerNorm, input: y, normalized_shape: 8}
  - {name: scores, type: MatMul, inputs: [norm, ny]}
)", "two.yaml");
  std::vector<std::string> names;
  const ModelParallelEstimate gathered = run(two, tp(2, true));
  for (const LayerEstimate& l : gathered.stages[0].estimate.layers) names.push_back(l.name + " " + to_string(l.outputs.front().shape));
  CHECK(names == std::vector<std::string>{"norm [1, 4, 16]", "ny [1, 8, 8]", "scores.gather_from_sequence_parallel_region [1, 8, 16]",
                                          "scores.gather_from_sequence_parallel_region_2 [1, 16, 8]", "scores [1, 8, 8]"});
}

TEST_CASE("--tp: a LLaMA rank's parameters are Megatron-LM's count, exactly") {
  TransformerShape m;
  m.hidden = 64;
  m.layers = 4;
  m.heads = 4;
  m.ffn_hidden = 160;
  m.vocab = 256;
  m.swiglu = m.rmsnorm = m.untied = true;
  for (std::int64_t t : {1, 2, 4}) {
    CAPTURE(t);
    const ModelParallelEstimate e = run(llama(4), tp(t));
    const MegatronMemory mg = megatron_theoretical_memory(m, megatron(t, 1));
    CHECK(static_cast<double>(e.stages[0].params) * 18 == mg.weight_and_optimizer_bytes);
    if (t == 2) {
      std::size_t c = 0, r = 0, v = 0, rep = 0;
      for (const TpLayer& l : e.split)
        ++(l.role == TpRole::Column ? c : l.role == TpRole::Row ? r : l.role == TpRole::VocabEmbedding ? v : rep);
      CHECK(c == 4 * 5 + 1);  // q, k, v, gate, up; the head
      CHECK(r == 4 * 2);      // o_proj, down_proj
      CHECK(v == 1);
      CHECK(rep == 4 * 2 + 1);  // the RMSNorms
    }
  }
  // Pipeline stage 0 holds the embedding and its layers; Megatron's most loaded rank also counts
  // 1/pp of the final norm, which nnmem puts on the last stage with the norm.
  const ModelParallelEstimate e = run(llama(4), mp_of(2, 4));
  const MegatronMemory mg = megatron_theoretical_memory(m, megatron(2, 4));
  CHECK(static_cast<double>(e.stages[0].params) * 18 == mg.weight_and_optimizer_bytes - 18.0 * 64 / 4);
}

TEST_CASE("--pp: stages, the schedules' micro-batches in flight, and the first stage holding the most") {
  SUBCASE("1F1B: stage i holds pp - i micro-batches, at most all of them") {
    const ModelParallelEstimate e = run(gpt(8), mp_of(1, 4), 8);
    REQUIRE(e.stages.size() == 4);
    for (std::int64_t i = 0; i < 4; ++i) {
      const PipelineStage& st = e.stages[static_cast<std::size_t>(i)];
      CAPTURE(i);
      CHECK(st.layers == 2);
      CHECK(st.in_flight == 4 - i);
      CHECK(st.peak_bytes == st.estimate.totals.peak_bytes + st.held_bytes * (3 - i));
    }
    CHECK(e.most_loaded() == 0);
    CHECK(run(gpt(8), mp_of(1, 4), 2).stages[0].in_flight == 2);
  }
  SUBCASE("GPipe: every micro-batch in flight on every stage") {
    for (const PipelineStage& st : run(gpt(8), mp_of(1, 4, PipelineSchedule::GPipe), 8).stages) CHECK(st.in_flight == 8);
  }
  SUBCASE("interleaved: Megatron's warm-up forwards, pp (1 + (pp - 1) / (pp V)) micro-batches on the first stage") {
    const ModelParallelEstimate e = run(gpt(8), mp_of(1, 4, PipelineSchedule::Interleaved, 2), 8);
    CHECK(e.stages[0].in_flight_chunks == 3 * 2 + 1 * 4 + 1);
    CHECK(e.stages[3].in_flight_chunks == 0 * 2 + 1 * 4 + 1);
    CHECK(e.stages[0].units == std::vector<std::string>{"layers.0", "layers.4"});
    CHECK(e.stages[0].layers == 2);
  }
  SUBCASE("--stages: an uneven split as given; balanced by default with the remainder on the last stages") {
    const ModelParallelEstimate given = run(gpt(8), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {3, 5}));
    CHECK(given.stages[0].layers == 3);
    CHECK(given.stages[1].layers == 5);
    const ModelParallelEstimate balanced = run(gpt(7), mp_of(1, 2));
    CHECK(balanced.stages[0].layers == 3);
    CHECK(balanced.stages[1].layers == 4);
    CHECK(balanced.stages[1].params > balanced.stages[0].params);
  }
  SUBCASE("the activations crossing in are the stage's input; the sum of the stages' parameters is the model's") {
    const ModelParallelEstimate e = run(llama(4), mp_of(1, 2));
    CHECK(e.stages[1].estimate.inputs.front().name == "model.layers.1.add_2");
    const Estimate whole = estimate(llama(4), EstimateOptions{});
    CHECK(e.stages[0].params + e.stages[1].params == whole.totals.params);
  }
}

TEST_CASE("--tp and --pp: the bad combinations are located errors naming both sides") {
  CHECK(error_of(gpt(2), tp(3)) ==
        "gpt.yaml:19:9: error: --tp 3: ScaledDotProductAttention 'layers.0.core' splits its attention heads across the ranks: "
        "expected the 8 query heads and 8 key-value heads to divide by 3, found remainders 2 and 2");
  CHECK(error_of(gpt(6), mp_of(1, 8)) ==
        "gpt.yaml:1:1: error: 'gpt_block' has 6 pipeline layers (its block instances, or its top-level layers with parameters): "
        "too few to fill 8 pipeline stages (--pp 8)");
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {1, 2})).find("--stages adds up to 3 layers; 'gpt_block' has 4 pipeline layers") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {4})).find("--stages gives 1 sizes; expected one for each of the 2 pipeline stages") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::Interleaved)).find("needs --virtual-stages of 2 or more") != std::string::npos);
  CHECK(error_of(gpt(4), mp_of(1, 2, PipelineSchedule::OneFOneB, 2)).find("--virtual-stages 2 needs --schedule interleaved, found --schedule 1f1b") !=
        std::string::npos);
  const ModelSpec norm_on_split = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: up, type: Linear, out_features: 32}
  - {name: norm, type: LayerNorm, normalized_shape: 32}
  - {name: down, type: Linear, out_features: 16}
)", "n.yaml");
  CHECK(error_of(norm_on_split, tp(2)) ==
        "n.yaml:5:5: error: --tp 2: LayerNorm 'norm' normalises or reduces a tensor split across the ranks, 'up' [1, 32], split over "
        "the ranks along dimension 1; only Linear, views, transposes, element-wise layers and attention can read one");
  CHECK(error_of(load_spec_file(source_path("examples/torch_encoder.yaml")), tp(2)).find("MultiheadAttention 'encoder.layers.0.self_attn' is one module") !=
        std::string::npos);
  CHECK(error_of(norm_on_split, mp_of(1, 4)).find("has 3 pipeline layers (its block instances, or its top-level layers with parameters): "
                                                "too few to fill 4 pipeline stages") != std::string::npos);
}

TEST_CASE("--tp on other architectures: an MLP's pairs, a CNN's classifier column-parallel, the rest replicated") {
  const ModelParallelEstimate mlp = run(load_spec_file(source_path("examples/mlp.yaml")), tp(2));
  std::vector<std::string> roles;
  for (const TpLayer& l : mlp.split) roles.emplace_back(name_of(l.role));
  CHECK(roles == std::vector<std::string>{"column-parallel", "row-parallel", "column-parallel"});
  const ModelParallelEstimate cnn = run(load_spec_file(source_path("examples/resnet18.yaml")), tp(2));
  CHECK(cnn.split.back().name == "fc");
  CHECK(cnn.split.back().role == TpRole::Column);
}

TEST_CASE("--checkpoint selective: each attention core a segment of its own; an error without one") {
  EstimateOptions o;
  o.step.checkpoint.segments = CheckpointSegments::Selective;
  const Estimate e = estimate(gpt(3), o);
  CHECK(e.checkpointed == std::vector<std::string>{"layers.0.core", "layers.1.core", "layers.2.core"});
  const Estimate none = estimate(gpt(3), {});
  CHECK(e.totals.peak_bytes < none.totals.peak_bytes);
  // Attention written out: the MatMul of the scores through the Softmax to the MatMul of the values.
  const Estimate unet = estimate(load_spec_file(source_path("examples/diffusion_unet.yaml")), o);
  REQUIRE_FALSE(unet.checkpointed.empty());
  CHECK(unet.checkpointed.front().find("w_soft") != std::string::npos);
  CHECK(error_from("inputs: {x: [16]}\nlayers:\n  - {name: fc, type: Linear, out_features: 4}\n", o) ==
        "test.yaml:1:1: error: --checkpoint selective recomputes the attention cores, and 'test' has none: expected a "
        "ScaledDotProductAttention layer, or a Softmax between two MatMul layers; found neither (use --checkpoint blocks or every:K)");
}

TEST_CASE("--tp and --pp reports: per GPU, labelled modelled, as a table and as JSON") {
  const ModelParallelEstimate e = run(gpt(4), mp_of(2, 2), 4);
  const std::string table = render_table(e);
  CHECK(table.find("gpt_block: tensor parallel 2 × pipeline parallel 2 × data parallel 1; schedule 1f1b, 4 micro-batches a step") == 0);
  CHECK(table.find("per GPU, modelled") != std::string::npos);
  CHECK(table.find("Most loaded: stage 0") != std::string::npos);
  CHECK(table.find("Layers with parameters: 8 column-parallel, 8 row-parallel, 8 replicated") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_json(e));
  const nlohmann::json& m = j["model_parallel"];
  CHECK(m["modelled"] == true);
  CHECK(m["tp"] == 2);
  CHECK(m["stages"].size() == 2);
  CHECK(m["peak_bytes_per_gpu"] == e.stages[e.most_loaded()].peak_bytes);
  CHECK(m["stages"][1]["in_flight"] == 1);
  CHECK(m["stages"][0]["estimate"]["totals"]["params"] == e.stages[0].params);
  CHECK(m["split"][1]["role"] == "column-parallel");
}

TEST_CASE("--tp: a row-parallel Linear's given in_features is the rank's share; --pp: a boundary inside a skip connection") {
  const ModelSpec explicit_in = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: up, type: Linear, in_features: 16, out_features: 32}
  - {name: act, type: ReLU}
  - {name: down, type: Linear, in_features: 32, out_features: 16}
)", "e.yaml");
  CHECK(run(explicit_in, tp(2)).stages[0].params == (16 * 16 + 16) + (16 * 16 + 16));  // up: 16 of its 32 rows; down: 16 of its 32 columns
  const ModelSpec skip = parse_spec(R"(
inputs: {x: [16]}
layers:
  - {name: a, type: Linear, out_features: 16}
  - {name: b, type: Linear, out_features: 16}
  - {name: c, type: Linear, out_features: 16}
  - {name: sum, type: Add, inputs: [a, c]}
)", "s.yaml");
  CHECK(error_of(skip, mp_of(1, 2, PipelineSchedule::OneFOneB, 1, {2, 1})) ==
        "s.yaml:5:5: error: --pp: pipeline stage 0 would send 2 tensors on ('a', 'b', …); a stage sends "
                                       "one, so the boundary cannot fall inside a skip connection: move it with --stages");
}

TEST_CASE("fit --tp --pp: the largest micro-batch per GPU whose most loaded stage fits") {
  EstimateOptions o;
  o.graph.torch = find_torch_profile("2.13");
  o.step.grad_accum = 4;
  ModelParallelOptions m = mp_of(2, 2);
  m.sequence_parallel = true;
  const auto peak_at = [&](std::int64_t b) {
    EstimateOptions at = o;
    at.graph.batch = b;
    const ModelParallelEstimate e = estimate_model_parallel(gpt(4), at, m);
    return e.stages[e.most_loaded()].peak_bytes;
  };
  FitOptions f;
  f.budget_bytes = peak_at(5);
  const ModelParallelFit fit = fit_model_parallel(gpt(4), o, m, f);
  CHECK(fit.micro_batch == 5);
  CHECK(fit.needed_bytes == peak_at(5));
  CHECK(fit.next_needed_bytes == peak_at(6));
  CHECK(fit.next_needed_bytes > f.budget_bytes);
  CHECK(fit.estimate.stages.size() == 2);
  const std::string table = render_table(fit);
  CHECK(table.find("Largest micro-batch per GPU that fits in") != std::string::npos);
  CHECK(table.find("per GPU, modelled") != std::string::npos);
  CHECK(nlohmann::json::parse(render_json(fit))["fit"]["micro_batch"] == 5);
  f.multiple_of = 2;
  CHECK(fit_model_parallel(gpt(4), o, m, f).micro_batch == 4);
  f.budget_bytes = peak_at(1) - 1;
  f.multiple_of = 1;
  const ModelParallelFit none = fit_model_parallel(gpt(4), o, m, f);
  CHECK(none.micro_batch == 0);
  CHECK(none.needed_bytes == peak_at(1));
  CHECK(render_table(none).find("No micro-batch per GPU fits in") != std::string::npos);
}

TEST_CASE("compare --tp --pp: the most loaded stage per GPU, a column each, with the largest micro-batch") {
  ModelParallelOptions with_sp = mp_of(2, 2);
  with_sp.sequence_parallel = true;
  ModelParallelComparison c;
  c.budget_bytes = run(gpt(4), mp_of(2, 2)).stages[0].peak_bytes * 3;
  for (const ModelParallelOptions& m : {mp_of(2, 2), with_sp}) {
    EstimateOptions o;
    o.graph.torch = find_torch_profile("2.13");
    FitOptions f;
    f.budget_bytes = *c.budget_bytes;
    c.columns.push_back({m.sequence_parallel ? "sp" : "tp", estimate_model_parallel(gpt(4), o, m), fit_model_parallel(gpt(4), o, m, f)});
  }
  const PipelineStage& tp_only = c.columns[0].estimate.stages[c.columns[0].estimate.most_loaded()];
  const PipelineStage& sp = c.columns[1].estimate.stages[c.columns[1].estimate.most_loaded()];
  CHECK(sp.held_bytes < tp_only.held_bytes);
  CHECK(c.columns[1].fit->micro_batch >= c.columns[0].fit->micro_batch);
  const std::string table = render_table(c);
  CHECK(table.find("per GPU, the most loaded stage's, modelled") != std::string::npos);
  CHECK(table.find("peak per GPU") != std::string::npos);
  CHECK(table.find(human_bytes(sp.peak_bytes)) != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_json(c));
  CHECK(j["columns"].size() == 2);
  CHECK(j["columns"][1]["model_parallel"]["sequence_parallel"] == true);
  CHECK(j["columns"][1]["model_parallel"]["peak_bytes_per_gpu"] == sp.peak_bytes);
  CHECK(j["columns"][0]["fit"]["micro_batch"] == c.columns[0].fit->micro_batch);
}
