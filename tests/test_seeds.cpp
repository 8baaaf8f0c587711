// The five seed texts' figures, reproduced exactly (docs/conventions.md explains each).
#include "helpers.hpp"
#include "nnmem/units.hpp"

using namespace nnmem;
using namespace nnmem::test;

namespace {
EstimateOptions batch_of(std::int64_t batch) {
  EstimateOptions o;
  o.graph.batch = batch;
  return o;
}
}  // namespace

TEST_CASE("seed 000: the blog's Model at batch 1, 1x32x32, under torchsummary's convention") {
  const Estimate e = estimate_file("examples/seed_conv.yaml");
  CHECK(e.totals.params == 4800);
  const TorchSummaryFigures f = torchsummary_figures(e);
  CHECK(f.input_bytes == 4096);
  CHECK(f.forward_backward_bytes == 574464);
  CHECK(f.params_bytes == 19200);
  CHECK(f.total_bytes == 597760);
  CHECK(exact_mib(f.total_bytes) == "0.570068359375");
  // The blog prints 0.5694580078125 MB = 4,776,960 bits: 5,120 bits (conv0's 160 parameters)
  // short, because its loop kept only the last module's parameters.
  CHECK(f.total_bytes * 8 - 4776960 == 160 * 32);
}

TEST_CASE("seed 001: the README's Model at batch 16, 1x256x256") {
  LoadOptions load;
  load.overrides = {{"size", "256"}};
  const Estimate e = estimate(load_spec_file(source_path("examples/seed_conv.yaml"), load), batch_of(16));
  const TorchSummaryFigures f = torchsummary_figures(e);
  CHECK(f.total_bytes == 428116736);
  CHECK(exact_mib(f.total_bytes) == "408.283935546875");
  // Published: (408.2833251953125, 3424928768 bits), conv0's 160 parameters short again.
  CHECK(f.total_bytes * 8 - 3424928768LL == 160 * 32);
}

TEST_CASE("seed 002: DAVEnet's audio branch, torchsummary at batch 1 and 128") {
  const Estimate one = estimate_file("examples/davenet_audio.yaml");
  CHECK(one.totals.params == 15965570);
  const TorchSummaryFigures f1 = torchsummary_figures(one);
  CHECK(mib(f1.input_bytes) == "0.16");
  CHECK(mib(f1.forward_backward_bytes) == "10.31");
  CHECK(mib(f1.params_bytes) == "60.90");
  CHECK(exact_mib(f1.forward_backward_bytes) == "10.3125");  // the notebook's hand computation

  const TorchSummaryFigures f = torchsummary_figures(estimate_file("examples/davenet_audio.yaml", batch_of(128)));
  CHECK(mib(f.input_bytes) == "20.00");
  CHECK(mib(f.forward_backward_bytes) == "1320.00");
  CHECK(mib(f.params_bytes) == "60.90");
  CHECK(mib(f.total_bytes) == "1400.90");
}

TEST_CASE("seed 002: DAVEnet's image branch (VGG16 features + Conv2d(512, 1024)), torchsummary at batch 128") {
  const TorchSummaryFigures f = torchsummary_figures(estimate_file("examples/davenet_vgg16.yaml", batch_of(128)));
  CHECK(mib(f.input_bytes) == "73.50");
  CHECK(mib(f.forward_backward_bytes) == "28126.00");
  CHECK(mib(f.params_bytes) == "74.14");
  CHECK(mib(f.total_bytes) == "28273.64");
}

TEST_CASE("seed 003: the TensorFlow MNIST CNN's weights, and weights + Adam's two slots") {
  EstimateOptions o;
  o.step.optimizer = OptimizerKind::Adam;
  const Estimate e = estimate_file("examples/tf_mnist_cnn.yaml", o);
  CHECK(e.totals.params == 3274634);
  CHECK(e.totals.param_bytes == 3274634LL * 4);
  // The question's 3x: exp_avg and exp_avg_sq double the weights twice over. 39,295,608 B is
  // 37.4752… MiB, which the answer (and nnmem's table, truncating) shows as 37.47.
  CHECK(mib_truncated(e.totals.param_bytes) == "12.4917");
  CHECK(mib_truncated(e.totals.param_bytes + e.totals.optimizer_state_bytes) == "37.4752");
  const std::string table = render_table(e);
  const auto line = [&](const std::string& label) { return table.substr(table.find(label), 80); };
  CHECK(line("  parameters").find(" 12.49") != std::string::npos);
  CHECK(line("weights + optimizer state").find(" 37.47") != std::string::npos);
}

TEST_CASE("seed 004: SimpleCNN as published fails at fc1, naming 3,136 declared and 50,176 received") {
  try {
    estimate_file("examples/simple_cnn.yaml");
    FAIL("the published SimpleCNN must not estimate");
  } catch (const Error& e) {
    CHECK(e.loc().line == 14);
    CHECK(e.loc().column == 44);
    CHECK(e.message().find("Linear 'fc1'") != std::string::npos);
    CHECK(e.message().find("3,136") != std::string::npos);
    CHECK(e.message().find("50,176") != std::string::npos);
  }
  CHECK(estimate_file("examples/simple_cnn_fixed.yaml").totals.params == 6442762);
}
