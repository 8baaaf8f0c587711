// Sequence parallelism (Korthikanti et al. 2022; Megatron's --sequence-parallel) against Table
// 2's rows, term by term, and through LLaMA, BERT and a matrix product over the sequence; and
// fit, compare and sweep with tensor and pipeline parallelism (docs/parallel.md). Modelled: no GPU
// cluster here to measure them.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "model_parallel_specs.hpp"
#include "nnmem/report.hpp"
#include "nnmem/units.hpp"

using namespace nnmem;
using namespace nnmem::test;

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
  // Megatron's global memory buffer: each stage's rank gathers into one buffer of its own, as
  // large as its largest gather (the whole [1, 32, 64] sequence), made with the model and kept;
  // its ColumnParallelLinear layers allocate no gather of their own.
  for (const PipelineStage& st : e.stages) {
    const auto& layers = st.estimate.layers;
    const auto buffer = std::find_if(layers.begin(), layers.end(), [](const LayerEstimate& l) { return l.name == "megatron.global_memory_buffer.mpu"; });
    REQUIRE(buffer != layers.end());
    CHECK(to_string(buffer->outputs.front().shape) == "[2048]");
    CHECK(st.estimate.totals.buffer_bytes >= 2048 * 4);
    CHECK(std::count_if(layers.begin(), layers.end(), [](const LayerEstimate& l) { return l.name.find("global_memory_buffer") != std::string::npos; }) == 1);
  }
  const ModelParallelEstimate no_sp = run(llama(4), whole);
  const auto& plain = no_sp.stages[0].estimate.layers;
  CHECK(std::none_of(plain.begin(), plain.end(), [](const LayerEstimate& l) { return l.name.find("global_memory_buffer") != std::string::npos; }));
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

TEST_CASE("sweep --tp --pp: every point the most loaded stage's rank, as estimate_model_parallel gives it") {
  EstimateOptions o;
  o.graph.torch = find_torch_profile("2.13");
  o.step.grad_accum = 4;
  ModelParallelOptions m = mp_of(2, 2, PipelineSchedule::Interleaved, 2);  // two chunks a rank: their states summed
  m.sequence_parallel = true;
  const auto load = [](const LoadOptions& lo) { return parse_spec(kGpt, "gpt.yaml", lo); };
  LoadOptions base;
  base.overrides = {{"layers", "4"}};
  const ModelParallelSweep s = sweep_model_parallel(load, base, {{"batch", {"1", "2", "4"}}}, o, m);
  REQUIRE(s.sweep.points.size() == 3);
  CHECK(s.data_parallel == 1);
  CHECK(s.micro_batches == 4);
  for (const SweepPoint& p : s.sweep.points) {
    CAPTURE(p.values[0]);
    EstimateOptions at = o;
    at.graph.batch = std::stoll(p.values[0]);
    const ModelParallelEstimate e = estimate_model_parallel(gpt(4), at, m);
    const PipelineStage& worst = e.stages[e.most_loaded()];
    CHECK(p.stage == worst.index);
    CHECK(p.in_flight == worst.in_flight);
    CHECK(p.totals.peak_bytes == worst.peak_bytes);
    CHECK(p.needed_bytes == worst.peak_bytes);
    CHECK(p.totals.params == worst.params);
    CHECK(p.totals.param_bytes + p.totals.grad_bytes + p.totals.optimizer_state_bytes == worst.state_bytes);
    CHECK(p.totals.param_bytes > worst.estimate.totals.param_bytes);  // both chunks' parameters
    std::int64_t sum = 0;
    for (std::int64_t b : p.totals.peak_breakdown) sum += b;
    CHECK(sum == worst.peak_bytes);
  }
  REQUIRE(s.sweep.fit.has_value());
  for (const SweepPoint& p : s.sweep.points)
    CHECK(std::abs(s.sweep.fit->at({std::stod(p.values[0])}) - static_cast<double>(p.totals.peak_bytes)) <= s.sweep.fit->max_residual + 0.5);
  const std::string table = render_table(s);
  CHECK(table.find("per GPU, the most loaded stage's, modelled") != std::string::npos);
  CHECK(table.find("in flight") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_json(s));
  CHECK(j["model_parallel"]["virtual_stages"] == 2);
  CHECK(j["points"][1]["peak_bytes"] == s.sweep.points[1].totals.peak_bytes);
  CHECK(j["points"][1]["stage"] == *s.sweep.points[1].stage);
  CHECK(render_sweep_svg(s).find("the most loaded pipeline stage") != std::string::npos);
}
