// Every bundled example estimates cleanly (but the deliberately broken seed), and the
// torchvision architectures have torchvision's parameter counts and, layer by layer,
// PyTorch's output shapes (as measured in validation/fixtures/torch-*/: shapes do not depend on
// the torch version, so every version's fixtures are checked).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "helpers.hpp"
#include "nnmem/plan.hpp"

using namespace nnmem;
using namespace nnmem::test;

TEST_CASE("every example estimates, in training and in inference, on both devices") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().filename().string();
    if (name == "simple_cnn.yaml") continue;  // seed 004's bug, kept on purpose (test_seeds.cpp)
    CAPTURE(name);
    for (Mode mode : {Mode::Train, Mode::Eval})
      for (Device device : {Device::Cuda, Device::Cpu}) {
        EstimateOptions o;
        o.graph.mode = mode;
        o.graph.device = device;
        o.graph.batch = 2;
        o.step.optimizer = example_optimizer("examples/" + name);
        const Estimate e = estimate_file("examples/" + name, o);
        CHECK(e.totals.peak_bytes > e.totals.param_bytes);
        CHECK(!render_table(e).empty());
        CHECK(!render_json(e).empty());
      }
    ++count;
  }
  CHECK(count >= 15);
}

TEST_CASE("every example replays on CUDA as large models train: autocast with checkpointing, accumulating") {
  // The CUDA replay refuses a step that leaves a tensor of its own behind (autocast's copies
  // recomputed under checkpointing once did, silently on the CPU): each example either
  // estimates, with the allocator's figures above the step's, or is refused with a located error.
  struct Config {
    DType amp;
    CheckpointImpl impl;
    std::int64_t grad_accum;
    int at_least;  // examples that estimate
  };
  for (const Config& c : {Config{DType::BFloat16, CheckpointImpl::NonReentrant, 1, 40},
                          Config{DType::Float16, CheckpointImpl::Reentrant, 2, 35}}) {
    int estimated = 0;
    for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string name = "examples/" + entry.path().filename().string();
      CAPTURE(name);
      CAPTURE(static_cast<int>(c.impl));
      EstimateOptions o;
      o.graph.batch = 2;
      o.graph.amp = c.amp;
      o.step.optimizer = example_optimizer(name);
      o.step.checkpoint = {CheckpointSegments::Blocks, 0, c.impl};
      o.step.grad_accum = c.grad_accum;
      try {
        const Estimate e = estimate_file(name, o);
        CHECK(e.totals.max_allocated_bytes >= e.totals.peak_bytes);
        CHECK(e.totals.reserved_bytes >= e.totals.max_allocated_bytes);
        ++estimated;
      } catch (const Error& refused) {
        CHECK(refused.loc().known());
      }
    }
    CHECK(estimated >= c.at_least);
  }
}

TEST_CASE("every example's CUDA replay settles when accumulating, whatever the loss") {
  // Under accumulation the step binds `loss / K`, a 0-dim quotient: the previous step's loss is
  // that, not the loss term's own storage (mse's is output-sized). It was taken for that
  // storage, so the replay, matching the previous step's tensors by size, freed nothing for it
  // and piled up a block a step: 1,000 iterations unconverged, allocating more than the step's
  // peak, on every example with mse, smooth_l1 or huber (fit then took a minute).
  int estimated = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = "examples/" + entry.path().filename().string();
    for (const LossKind loss : {LossKind::Mse, LossKind::SmoothL1, LossKind::L1, LossKind::BceWithLogits}) {
      CAPTURE(name);
      CAPTURE(static_cast<int>(loss));
      EstimateOptions o;
      o.graph.batch = 2;
      o.step.optimizer = OptimizerKind::Sgd;
      o.step.loss = loss;
      o.step.grad_accum = 2;
      o.step.timeline = false;
      try {
        const Estimate e = estimate_file(name, o);
        REQUIRE(e.cuda_allocator);
        CHECK(e.cuda_allocator->converged);  // (RoBERTa's cycle takes over a hundred iterations to repeat)
        ++estimated;
      } catch (const Error& refused) {
        CHECK(refused.loc().known());
      }
    }
  }
  CHECK(estimated >= 100);
}

TEST_CASE("an estimate without its timeline has every figure of one with it") {
  // StepOptions::timeline off records neither the events' words nor, without a replay, the
  // events: the same step, so the same figures (the JSON without its timeline holds them all).
  ReportOptions figures;
  figures.timeline = false;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("examples"))) {
    if (entry.path().extension() != ".yaml" || entry.path().filename() == "simple_cnn.yaml") continue;
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    for (Device device : {Device::Cuda, Device::Cpu})
      for (int variant = 0; variant < 2; ++variant) {
        CAPTURE(variant);
        EstimateOptions o;
        o.graph.device = device;
        o.graph.batch = 2;
        o.step.optimizer = example_optimizer("examples/" + name);
        if (variant == 1) {  // micro-steps (not with a sparse gradient: refused) and checkpointed blocks: more of the step's words
          if (o.step.optimizer == OptimizerKind::Adam) o.step.grad_accum = 2;
          o.step.checkpoint.segments = CheckpointSegments::Blocks;
        }
        const Estimate with = estimate_file("examples/" + name, o);
        o.step.timeline = false;
        const Estimate without = estimate_file("examples/" + name, o);
        CHECK(!with.timeline.empty());
        CHECK(with.timeline.tensors.size() > 0);
        CHECK(without.timeline.empty());
        CHECK(without.timeline.tensors.empty());
        CHECK(render_json(without, figures) == render_json(with, figures));
        CHECK(render_table(without) == render_table(with));
      }
    ++count;
  }
  CHECK(count >= 15);
  // fit reads the step's events whatever the option says: the same batch either way.
  const ModelSpec spec = load_spec_file(source_path("examples/mlp.yaml"));
  FitOptions budget;
  budget.budget_bytes = 24LL << 20;
  EstimateOptions o;
  o.graph.device = Device::Cuda;
  const BatchFit with = fit_batch(spec, o, budget);
  o.step.timeline = false;
  const BatchFit without = fit_batch(spec, o, budget);
  CHECK(with.batch == 1411);
  CHECK(without.batch == with.batch);
  CHECK(render_json(without, figures) == render_json(with, figures));
}

TEST_CASE("torchvision's parameter counts") {
  CHECK(estimate_file("examples/lenet5.yaml").totals.params == 61706);
  CHECK(estimate_file("examples/vgg16.yaml").totals.params == 138357544);
  CHECK(estimate_file("examples/resnet18.yaml").totals.params == 11689512);
  CHECK(estimate_file("examples/resnet50.yaml").totals.params == 25557032);
  CHECK(estimate_file("examples/efficientnet_b0.yaml").totals.params == 5288548);
}

namespace {

Totals totals_of(const std::string& example, const std::vector<std::pair<std::string, std::string>>& set = {}) {
  LoadOptions load;
  load.overrides = set;
  return estimate(load_spec_file(source_path(example), load), {}).totals;
}

}  // namespace

// Ultralytics' counts (DetectionModel("yolov8X.yaml"), ultralytics 8.4.190, validation/check_yolo.py),
// the U-Net paper's network, and the DDPM-style U-Net's (validation/networks_zoo.py's module).
TEST_CASE("YOLOv8 at every scale, the U-Net and the diffusion U-Net have their reference counts") {
  const Totals n = totals_of("examples/yolov8.yaml");
  CHECK(n.params == 3157200);
  CHECK(n.non_trainable_params == 16);  // the DFL's frozen convolution
  CHECK(totals_of("examples/yolov8.yaml", {{"width_multiple", "0.5"}}).params == 11166560);
  CHECK(totals_of("examples/yolov8.yaml", {{"depth_multiple", "0.67"}, {"width_multiple", "0.75"}, {"max_channels", "768"}})
            .params == 25902640);
  CHECK(totals_of("examples/yolov8.yaml", {{"depth_multiple", "1.0"}, {"width_multiple", "1.0"}, {"max_channels", "512"}})
            .params == 43691520);
  CHECK(totals_of("examples/yolov8.yaml", {{"depth_multiple", "1.0"}, {"width_multiple", "1.25"}, {"max_channels", "512"}})
            .params == 68229648);
  CHECK(totals_of("examples/unet.yaml").params == 31030658);
  CHECK(totals_of("examples/diffusion_unet.yaml").params == 13168515);
  // torchvision's convnext_tiny, _small, _base and _large (0.14.1; check_torchvision.py)
  CHECK(totals_of("examples/convnext_tiny.yaml").params == 28589128);
  CHECK(totals_of("examples/convnext_tiny.yaml", {{"d3", "27"}}).params == 50223688);
  CHECK(totals_of("examples/convnext_tiny.yaml", {{"d3", "27"}, {"c", "128"}}).params == 88591464);
  CHECK(totals_of("examples/convnext_tiny.yaml", {{"d3", "27"}, {"c", "192"}}).params == 197767336);
}

TEST_CASE("the examples' outputs: YOLOv8's three levels at strides 8, 16, 32; the U-Net's 388 x 388 map") {
  const Estimate y = estimate_file("examples/yolov8.yaml");
  const auto shape_of = [](const Estimate& e, const std::string& layer) {
    for (const auto& row : e.layers)
      if (row.name == layer) return row.outputs.at(0).shape;
    FAIL("no layer " << layer);
    return Shape{};
  };
  CHECK(shape_of(y, "model.22.cv2.0.2") == Shape{1, 64, 80, 80});
  CHECK(shape_of(y, "model.22.cv3.1.2") == Shape{1, 80, 40, 40});
  CHECK(shape_of(y, "model.22.cv3.2.2") == Shape{1, 80, 20, 20});
  CHECK(shape_of(y, "model.22.pred") == Shape{1, 144, 8400});
  CHECK(shape_of(estimate_file("examples/unet.yaml"), "head") == Shape{1, 2, 388, 388});
}

// A PyTorch module called several times (DAVEnet's pool, torchvision's block relu) appears
// once in the fixture with one shape per call; nnmem names the calls NAME, NAME_2, … or
// NAME_1, NAME_2, ….
TEST_CASE("every layer's output shape is PyTorch's, on every validation network") {
  int networks = 0, compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(source_path("validation/fixtures"))) {
    if (entry.path().extension() != ".json") continue;
    const nlohmann::json fixture = nlohmann::json::parse(std::ifstream(entry.path()));
    const std::string network = fixture["network"];
    CAPTURE(entry.path().string());
    const ModelSpec spec = validation_network(network);
    for (const auto& [batch, measured] : fixture["per_batch"].items()) {
      EstimateOptions o;
      o.graph.batch = std::stoll(batch);
      o.step.optimizer = OptimizerKind::Sgd;  // the shapes are the optimizer's to ignore; plain SGD steps every network
      const Estimate e = estimate(spec, o);
      for (const auto& layer : measured["layers"]) {
        const std::string name = layer["name"];
        // T5's encoder calls its embed_tokens, whose weight is the `shared` module's, which it never
        // calls: the spec's `shared` layer makes the lookup, and encoder.embed_tokens.weight is a
        // tied Parameter no layer reads (the module that holds it); its relative bias lookups have no batch
        // dimension ([Tq, Tk, heads]), where the spec's have a leading 1 that broadcasts.
        const bool t5 = network.rfind("hf_t5", 0) == 0 || network == "t5_small";
        if (t5 && (name == "shared" || name == "encoder.embed_tokens" ||
                                               name.find("relative_attention_bias") != std::string::npos))
          continue;
        const std::regex call(std::regex_replace(name, std::regex(R"([.])"), R"(\.)") + "(_[0-9]+)?");
        std::vector<std::vector<Shape>> ours;  // per call, every output's shape
        std::int64_t params = -1;
        for (const auto& l : e.layers)
          if (std::regex_match(l.name, call)) {
            ours.emplace_back();
            for (const auto& out : l.outputs) ours.back().push_back(out.shape);
            if (params < 0) params = l.params;
          }
        CAPTURE(name);
        // LLaMA's rotary_emb returns (cos, sin), [1, T, head_dim] each, which the spec makes as
        // two Constants, cos and sin, already unsqueezed for the heads ([1, 1, T, head_dim]).
        if ((network.rfind("hf_llama", 0) == 0 || network.rfind("hf_mixtral", 0) == 0) && name == "model.rotary_emb") continue;
        // Mixtral's router module returns its logits [T, E], top-k weights and indices (the spec's
        // Linear mlp.gate gives the logits as [N, T, E], MoEExperts the rest); the experts' silu
        // is inside MoEExperts.
        if (network.rfind("hf_mixtral", 0) == 0 && (std::regex_search(name, std::regex(R"(mlp\.gate$|mlp\.experts\.act_fn$)"))))
          continue;
        REQUIRE(ours.size() == layer["output_shapes"].size());
        // A module PyTorch builds but never calls (an EfficientNet stage's first stochastic
        // depth, whose block has no residual) is no layer of the spec.
        if (ours.empty()) continue;
        // A module with several outputs (an LSTM's output, h_n and c_n) has a list of shapes per call.
        for (std::size_t i = 0; i < ours.size(); ++i) {
          const auto& theirs = layer["output_shapes"][i];
          if (!theirs.empty() && theirs[0].is_array())
            CHECK(ours[i] == theirs.get<std::vector<Shape>>());
          else
            CHECK(ours[i].front() == theirs.get<Shape>());
        }
        // A tied parameter (GPT-2's lm_head.weight) is its owner's: PyTorch lists it under both modules.
        const auto spec_layer = std::find_if(spec.layers.begin(), spec.layers.end(), [&](const LayerSpec& l) { return l.name == name; });
        if (spec_layer == spec.layers.end() || spec_layer->links().ties.empty()) CHECK(params == layer["params"].get<std::int64_t>());
        ++compared;
      }
      // A model with several outputs (a loss each) has a shape per output.
      const nlohmann::json& shapes = measured["output_shape"];
      if (!shapes.empty() && shapes[0].is_array()) {
        REQUIRE(shapes.size() == spec.outputs.size());
        for (std::size_t k = 0; k < spec.outputs.size(); ++k) {
          const auto layer = std::find_if(e.layers.begin(), e.layers.end(), [&](const LayerEstimate& l) { return l.name == spec.outputs[k]; });
          REQUIRE(layer != e.layers.end());
          CHECK(layer->outputs.front().shape == shapes[k].get<Shape>());
        }
      } else {
        CHECK(e.layers.back().outputs.front().shape == shapes.get<Shape>());
      }
    }
    ++networks;
  }
  CHECK(networks >= 16);
  CHECK(compared > 300);
}
