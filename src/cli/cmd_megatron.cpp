// nnmem megatron: Megatron-LM's theoretical memory and Korthikanti et al.'s activations for a
// transformer given by its shape (--preset llama2-7b, or --hidden, --layers, ...), under tensor,
// pipeline and data parallelism. Modelled: until the transformer layers are in nnmem's specs the
// shape comes from these flags; once they land it should come from the spec.
#include <iostream>
#include <memory>

#include "args.hpp"
#include "cli_support.hpp"
#include "commands.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem::cli {

namespace {

struct MegatronArgs {
  std::string preset;
  TransformerShape shape;
  MegatronSetup setup;
  std::int64_t vpp = 0, microbatches = 0;
  std::string recompute = "none";
};

std::string count(std::int64_t n, const std::string& what) { return std::to_string(n) + " " + what; }

// What Megatron-LM itself refuses (its arguments' checks), named by the flags that conflict.
void check(const MegatronArgs& a) {
  const TransformerShape& m = a.shape;
  const MegatronSetup& s = a.setup;
  for (const auto& [flag, value] : {std::pair{"--hidden", m.hidden}, {"--layers", m.layers}, {"--heads", m.heads},
                                    {"--ffn", m.ffn_hidden}, {"--vocab", m.vocab}, {"--seq", s.seq}})
    if (value < 1) throw CLI::ValidationError(flag, "needed (or --preset llama2-7b), a number above zero");
  if (m.heads % s.tp != 0)
    throw CLI::ValidationError("--tp", "the " + count(m.heads, "attention heads") + " (--heads) do not split over " +
                                           count(s.tp, "tensor-parallel ranks"));
  if (m.ffn_hidden % s.tp != 0)
    throw CLI::ValidationError("--tp", "the FFN's " + std::to_string(m.ffn_hidden) + " columns (--ffn) do not split over " +
                                           count(s.tp, "tensor-parallel ranks"));
  if (m.query_groups > 0 && (m.heads % m.query_groups != 0 || m.query_groups % s.tp != 0))
    throw CLI::ValidationError("--query-groups", std::to_string(m.query_groups) + " must divide the " +
                                                     count(m.heads, "heads") + " and split over --tp " + std::to_string(s.tp));
  if (s.pp > m.layers)
    throw CLI::ValidationError("--pp", count(m.layers, "layers") + " (--layers) cannot fill " + count(s.pp, "pipeline stages"));
  const std::int64_t stages = s.pp * (s.vpp ? *s.vpp : 1);
  if (m.layers % stages != 0)
    throw CLI::ValidationError(s.vpp ? "--vpp" : "--pp", count(m.layers, "layers") + " (--layers) do not split evenly into " +
                                                             count(stages, "stages") + (s.vpp ? " (--pp × --vpp)" : ""));
  if (s.vpp && s.pp == 1) throw CLI::ValidationError("--vpp", "an interleaved schedule needs --pp above 1");
  if (s.sequence_parallel && s.tp == 1) throw CLI::ValidationError("--sequence-parallel", "splits along tensor parallelism: it needs --tp above 1");
}

int run(MegatronArgs a) {
  if (a.preset == "llama2-7b") {
    TransformerShape& m = a.shape;
    if (m.hidden == 0) m.hidden = 4096;
    if (m.layers == 0) m.layers = 32;
    if (m.heads == 0) m.heads = 32;
    if (m.ffn_hidden == 0) m.ffn_hidden = 11008;
    if (m.vocab == 0) m.vocab = 32000;
    m.swiglu = m.rmsnorm = m.untied = true;
    if (a.setup.seq == 0) a.setup.seq = 4096;
  }
  if (a.vpp > 0) a.setup.vpp = a.vpp;
  if (a.microbatches > 0) a.setup.num_microbatches = a.microbatches;
  a.setup.selective_recompute = a.recompute == "selective";
  check(a);
  std::cout << render_megatron(a.shape, a.setup);
  return 0;
}

}  // namespace

Subcommand add_megatron(CLI::App& parent) {
  auto a = std::make_shared<MegatronArgs>();
  CLI::App* app = parent.add_subcommand("megatron", "Megatron-LM's theoretical memory and Korthikanti et al.'s activations "
                                                    "for a transformer shape under tensor, pipeline and data parallelism (modelled)");
  app->add_option("--preset", a->preset, "a shape: llama2-7b (flags given override it)")->check(one_of({"llama2-7b"}));
  const auto size = [&](const char* flag, std::int64_t& field, const char* help) {
    app->add_option(flag, field, help)->check(integer_between(1, std::int64_t{1} << 40));
  };
  size("--hidden", a->shape.hidden, "hidden size h");
  size("--layers", a->shape.layers, "transformer layers L");
  size("--heads", a->shape.heads, "attention heads a");
  size("--ffn", a->shape.ffn_hidden, "the MLP's hidden size");
  size("--vocab", a->shape.vocab, "vocabulary (padded)");
  size("--kv-channels", a->shape.kv_channels, "channels per head (default hidden / heads)");
  size("--query-groups", a->shape.query_groups, "grouped-query attention's key-value groups");
  app->add_flag("--swiglu", a->shape.swiglu, "a gated MLP (three matrices)");
  app->add_flag("--rmsnorm", a->shape.rmsnorm, "RMSNorm (else LayerNorm, with a bias)");
  app->add_flag("--untied", a->shape.untied, "untied input and output embeddings");
  size("--seq", a->setup.seq, "sequence length s");
  app->add_option("--micro-batch", a->setup.micro_batch, "micro-batch b")->check(integer_between(1, std::int64_t{1} << 40))->capture_default_str();
  app->add_option("--tp", a->setup.tp, "tensor-parallel ranks")->check(integer_between(1, 1 << 20))->capture_default_str();
  app->add_option("--pp", a->setup.pp, "pipeline stages")->check(integer_between(1, 1 << 20))->capture_default_str();
  app->add_option("--vpp", a->vpp, "interleaved schedule: virtual stages per pipeline rank")->check(integer_between(1, 1 << 20));
  app->add_option("--dp", a->setup.dp, "data-parallel ranks")->check(integer_between(1, 1 << 20))->capture_default_str();
  app->add_option("--microbatches", a->microbatches, "micro-batches per step (fewer than --pp leaves stages idle)")
      ->check(integer_between(1, std::int64_t{1} << 40));
  app->add_flag("--distributed-optimizer", a->setup.distributed_optimizer, "optimizer state sharded over --dp");
  app->add_flag("--sequence-parallel", a->setup.sequence_parallel, "sequence parallelism (with --tp)");
  app->add_option("--recompute", a->recompute, "activation recomputation")->check(one_of({"none", "selective"}))->capture_default_str();
  return {app, [a] { return run(*a); }};
}

}  // namespace nnmem::cli
