// Megatron-LM's theoretical memory figures (megatron/training/theoretical_memory_usage.py, the
// dense path: no MoE, MTP or multi-latent attention), in the order Python evaluates them: an int
// operation stays exact, a `/` or a float operand makes a double. And Korthikanti et al.'s
// per-layer activation formulas.
#include <algorithm>

#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"
#include "python_float.hpp"

namespace nnmem {
namespace {

double exact(std::int64_t n) { return detail::python_float(n, "megatron", "Python's"); }

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(SourceLoc{}, "megatron: " + what);
}

// The pipeline's schedule applied to a first stage's activations.
double schedule(double activation, const MegatronSetup& s) {
  if (s.vpp) {
    const double penalty = 1 + (exact(s.pp - 1) / exact(checked_mul(s.pp, *s.vpp)));
    activation *= penalty;
  }
  if (!s.vpp && s.pp > 1 && s.num_microbatches) {
    const double fraction = exact(*s.num_microbatches) / exact(s.pp);
    if (fraction < 1) activation *= fraction;  // min(1, n / pp): 1 keeps it as it is
  }
  return activation;
}

// compute_activation_memory: Table 2's sequence-parallel, selective-recompute formula.
double activation_with_sp(const TransformerShape& m, const MegatronSetup& s) {
  const std::int64_t sbh = checked_mul(checked_mul(s.seq, s.micro_batch), m.hidden);
  double a = exact(sbh) * (18 + (4 * (exact(m.ffn_hidden) / exact(m.hidden))));
  a *= exact(m.layers);
  a += exact(checked_mul(checked_mul(checked_mul(8, s.seq), s.micro_batch), s.pp));
  a += exact(checked_mul(sbh, s.pp));
  a = schedule(a, s);
  if (s.pp == 1) a += exact(checked_mul(sbh, 4)) * (1 + (exact(m.vocab) / exact(m.hidden)));
  return a / exact(s.tp);
}

// compute_activation_memory_without_sp.
double activation_without_sp(const TransformerShape& m, const MegatronSetup& s) {
  const std::int64_t sbh = checked_mul(checked_mul(s.seq, s.micro_batch), m.hidden);
  const double per_layer = exact(sbh) * (10 + (24 / exact(s.tp)));
  double a = per_layer * exact(m.layers);
  a += exact(checked_mul(checked_mul(checked_mul(8, s.seq), s.micro_batch), s.pp));
  a += exact(checked_mul(sbh, s.pp));
  a = schedule(a, s);
  if (s.pp == 1) {
    const double logits = exact(checked_mul(checked_mul(s.seq, s.micro_batch), m.vocab)) / exact(s.tp);
    const std::int64_t final_ln_output = checked_mul(checked_mul(s.seq, s.micro_batch), m.hidden);
    a += (logits + exact(final_ln_output)) * 2;
  }
  return a * 1.05;  // "buffer for optimizer and miscellaneous temporaries"
}

}  // namespace

MegatronMemory megatron_theoretical_memory(const TransformerShape& m, const MegatronSetup& s) {
  require(m.hidden > 0 && m.layers > 0 && m.heads > 0 && m.ffn_hidden > 0 && m.vocab > 0, "the transformer's sizes must be above zero");
  require(s.seq > 0 && s.micro_batch > 0 && s.tp > 0 && s.pp > 0 && s.dp > 0 && (!s.vpp || *s.vpp > 0) &&
              (!s.num_microbatches || *s.num_microbatches > 0),
          "the sequence, micro-batch and parallel sizes must be above zero");
  const std::int64_t kv = m.kv_channels > 0 ? m.kv_channels : m.hidden / m.heads;
  const std::int64_t groups = m.query_groups > 0 ? m.query_groups : m.heads;
  require(m.heads % groups == 0, "the attention heads (" + std::to_string(m.heads) + ") must split into the query groups (" +
                                     std::to_string(groups) + ")");
  const std::int64_t h = m.hidden;
  const std::int64_t norm = m.rmsnorm ? 1 : 2;  // LayerNorm has a bias
  const double ratio = exact(checked_mul(kv, m.heads)) / exact(h);
  const double attention = exact(checked_mul(checked_mul(2, h), h)) * ((1 + (exact(groups) / exact(m.heads))) * ratio);
  const std::int64_t mlp_int = checked_mul(checked_mul(2, h), m.ffn_hidden);
  const double dense_mlp = m.swiglu ? exact(mlp_int) * 1.5 : exact(mlp_int);
  const std::int64_t layernorm = checked_mul(checked_mul(2, h), norm);
  const std::int64_t final_layernorm = checked_mul(norm, h);
  const std::int64_t embedding = checked_mul(h, m.vocab);

  const double tp_sharded_block = (attention + dense_mlp) * exact(m.layers);
  const std::int64_t replicated_block = checked_add(checked_mul(layernorm, m.layers), final_layernorm);
  MegatronMemory out;
  out.total_parameters = (tp_sharded_block + exact(replicated_block)) + exact(m.untied ? checked_mul(2, embedding) : embedding);

  double tp_on_most_loaded = ((tp_sharded_block / exact(s.pp)) + exact(embedding)) / exact(s.tp);
  const double replicated_on_most_loaded = exact(replicated_block) / exact(s.pp);
  if (m.untied && s.pp == 1) tp_on_most_loaded += exact(embedding) / exact(s.tp);
  const double bytes_per_parameter = s.distributed_optimizer ? 6 + (12 / exact(s.dp)) : 18;
  out.weight_and_optimizer_bytes = (tp_on_most_loaded + replicated_on_most_loaded) * bytes_per_parameter;

  out.sequence_parallel_formula = s.sequence_parallel && s.selective_recompute;
  out.activation_bytes = out.sequence_parallel_formula ? activation_with_sp(m, s) : activation_without_sp(m, s);
  return out;
}

double korthikanti_layer_bytes(std::int64_t seq, std::int64_t batch, std::int64_t hidden, std::int64_t heads, std::int64_t tp,
                               bool sequence_parallel, Recompute recompute) {
  require(seq > 0 && batch > 0 && hidden > 0 && heads > 0 && tp > 0, "the sizes must be above zero");
  const std::int64_t sb = checked_mul(seq, batch);
  if (recompute == Recompute::Full) return exact(checked_mul(checked_mul(2, sb), hidden));
  // s·b·N / D with N and D integers: 34h + 5as (attention core included unless selective) and its parts.
  const std::int64_t core = recompute == Recompute::Selective ? 0 : checked_mul(checked_mul(5, heads), seq);
  std::int64_t n = 0, d = 1;
  if (tp == 1 || sequence_parallel) {
    n = checked_add(checked_mul(34, hidden), core);  // everything split across t with sequence parallelism
    d = tp;
  } else {
    // 10 s·b·h stay whole on every rank (layer norms' inputs, dropout masks and outputs); 24 s·b·h and the core split.
    n = checked_add(checked_add(checked_mul(checked_mul(10, hidden), tp), checked_mul(24, hidden)), core);
    d = tp;
  }
  return exact(checked_mul(sb, n)) / exact(d);
}

}  // namespace nnmem
