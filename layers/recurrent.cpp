// Recurrent layers: RNN, LSTM and GRU over a whole sequence, and their one-step cells RNNCell,
// LSTMCell and GRUCell. Outputs as PyTorch returns them: the sequence output, then h_n (and
// c_n for LSTM) — `NAME`, `NAME:1`, `NAME:2` in a spec; a cell returns h' (LSTMCell: h', c').
//
// What backward keeps was measured op by op on the CPU (validation/probe_recurrent.py, its
// findings in validation/ops_saved_recurrent.md), storage by storage, T steps of a layer of
// N sequences and H hidden units:
// - the generic path (RNN, GRU, the cells in both versions; LSTM in 1.13 and with proj_size):
//   the input projection of the whole sequence is one addmm (its input kept for the weight's
//   gradient), then each step's ops keep their own tensors — per layer and direction
//   RNN T·[N, H] (each step's activation), GRU (7T−1)·[N, H] (each step's 3H gates, two
//   clones in-place ops save, tanh's result, and h_t for the next step), LSTM (7T−2)·[N, H]
//   (4H gates, tanh(c_t), and c_t and h_t for the next step); the zero initial states made by
//   the module, and each lower layer's output (with dropout, its mask and the dropped output);
// - oneDNN's LSTM (2.x on the CPU, no proj_size; TorchProfile::lstm_onednn_on_cpu): per layer
//   and direction its input and output, h and c at the last step, and a uint8 workspace, whose
//   size is oneDNN's (rnn_utils: gates, h, states, diff states, each rounded up to a 4 KiB page),
//   checked against 59 measured shapes; under CPU autocast in bfloat16, on low-precision copies
//   of its input, states and weights, which it keeps too (recurrent_onednn.cpp).
// Backward on the CPU runs as PyTorch's engine runs it, node by node (recurrent_backward.cpp).
// On CUDA cuDNN runs them, one node keeping its input, output, initial states and an opaque reserve
// space, its size modelled (recurrent_cudnn.cpp, cudnn_rnn.hpp).
#include "common.hpp"
#include "cudnn_rnn.hpp"
#include "recurrent_backward.hpp"
#include "recurrent_shared.hpp"

namespace nnmem::layers {
namespace {

// Adds `units` tensors of [N, width] as one kept tensor of that many bytes; nothing for 0.
void keep_units(LayerResult& res, std::int64_t units, std::int64_t n, std::int64_t width, DType dtype, const std::string& what) {
  if (units > 0) res.save_extra({{units, n, width}, dtype}, what);
}

LayerResult infer_sequence(const LayerCall& call, Cell cell) {
  const bool batch_first = call.attrs.flag("batch_first");
  require_rank(call, 3, 3, batch_first ? "[N, L, input_size] (batch_first)" : "[L, N, input_size]");
  require_float(call);
  const Shape& in = call.shape();
  Dims d{batch_first ? in[1] : in[0], batch_first ? in[0] : in[1], in[2], call.attrs.integer("hidden_size"),
         call.attrs.integer("num_layers"), call.attrs.flag("bidirectional") ? 2 : 1, 0, 0};
  check_declared(call, "input_size", d.input, "features in its last dimension");
  if (cell == Cell::Lstm) d.proj = call.attrs.integer("proj_size");
  if (d.proj >= d.hidden)
    throw LayerError("proj_size must be smaller than hidden_size (" + std::to_string(d.hidden) + "), found " + std::to_string(d.proj),
                     "proj_size");
  d.out = d.proj > 0 ? d.proj : d.hidden;
  const DType dtype = call.input().dtype;
  const std::int64_t gates = checked_mul(gate_count(cell), d.hidden);
  const std::int64_t width = checked_mul(d.dirs, d.out);

  LayerResult res;
  res.outputs.push_back({batch_first ? Shape{d.n, d.t, width} : Shape{d.t, d.n, width}, dtype});
  res.output_strided = batch_first;  // the time-major result, transposed
  const std::int64_t states = checked_mul(d.layers, d.dirs);
  res.outputs.push_back({{states, d.n, d.out}, dtype});
  if (cell == Cell::Lstm) res.outputs.push_back({{states, d.n, d.hidden}, dtype});
  const bool bias = call.attrs.flag("bias");
  std::vector<int> first_param;  // per layer and direction: its first parameter
  for (std::int64_t l = 0; l < d.layers; ++l) {
    const std::int64_t layer_in = l == 0 ? d.input : width;
    for (std::int64_t dir = 0; dir < d.dirs; ++dir) {
      first_param.push_back(static_cast<int>(res.params.size()));
      const std::string suffix = "_l" + std::to_string(l) + (dir == 1 ? "_reverse" : "");
      res.params.push_back({"weight_ih" + suffix, {gates, layer_in}});
      res.params.push_back({"weight_hh" + suffix, {gates, d.out}});
      if (bias) {
        res.params.push_back({"bias_ih" + suffix, {gates}});
        res.params.push_back({"bias_hh" + suffix, {gates}});
      }
      if (d.proj > 0) res.params.push_back({"weight_hr" + suffix, {d.proj, d.hidden}});
      std::int64_t per_step = checked_add(checked_mul(gates, layer_in), checked_mul(gates, d.out));
      if (d.proj > 0) per_step = checked_add(per_step, checked_mul(d.proj, d.hidden));
      res.macs = checked_add(res.macs, checked_mul(checked_mul(d.t, d.n), per_step));
    }
  }

  if (call.ctx.device == Device::Cuda) {
    cudnn_sequence(call, cell, d, batch_first, res);
    return res;
  }
  // On the CPU from here on. A 16-bit model's LSTM (no autocast, no proj_size) under torch 2.x:
  // in bfloat16 it runs oneDNN's kernel, which keeps 2.7 to 3.4 times the generic path's tensors
  // (torch 2.13, validation/measure.py --dtype bfloat16: lstm_lm 198,146 bytes against 72,194);
  // in float16 its peak is 3,966 bytes below the generic path's (lstm_seq). Refused until
  // measured into the model; 1.13's generic path is exact, and so are the GRU and RNN (but for
  // the harness's float32 regression targets, which promote the loss).
  if (cell == Cell::Lstm && d.proj == 0 && !call.ctx.amp && (dtype == DType::BFloat16 || dtype == DType::Float16) &&
      call.ctx.torch->lstm_onednn_on_cpu)
    throw LayerError("a " + std::string(dtype_name(dtype)) + " model's LSTM on the CPU is not modelled yet in PyTorch " +
                     std::string(call.ctx.torch->version) + " (in bfloat16 it runs oneDNN's kernel); expected float32 weights (--amp " +
                     std::string(dtype_name(dtype)) + " for mixed precision), --torch 1.13 or --device cuda, found " +
                     std::string(dtype_name(dtype)) + " ones on the CPU");
  const bool onednn = cell == Cell::Lstm && d.proj == 0 && dtype == DType::Float32 && call.ctx.torch->lstm_onednn_on_cpu;
  // Under CPU autocast oneDNN's LSTM runs in the low-precision dtype (its outputs too; what it
  // keeps: recurrent_onednn.cpp).
  const std::optional<DType> onednn_low = onednn ? call.ctx.amp : std::nullopt;
  // In float16 nothing was measured: torch 2.13 refused it on the CPU that measures (AVX512-BF16,
  // no AVX512-FP16), and what it keeps where it runs is unknown.
  if (onednn_low == DType::Float16)
    throw LayerError("float16 autocast on the CPU is not modelled for oneDNN's LSTM (PyTorch " + std::string(call.ctx.torch->version) +
                     " refused it where measured: RuntimeError: could not create a primitive descriptor for the LSTM forward "
                     "propagation primitive); expected --amp bfloat16 or --device cuda, found --amp float16 --device cpu");
  if (onednn_low)
    for (TensorType& out : res.outputs) out.dtype = *onednn_low;
  const bool backward = call.training() && (call.input_requires_grad() || call.trainable);
  // The weights' gradients need each step's h_(t-1) (the zero h_0 too) and each layer's input;
  // a frozen layer's generic path keeps neither (oneDNN keeps its whole state regardless).
  const bool for_weights = backward && (onednn || call.trainable);
  // The module's zero initial states (h_0, and c_0 for LSTM, one tensor for every layer): kept,
  // or alive while the module runs. With batch_first, a time-major copy of the input (the
  // generic path makes one per direction), kept, or freed inside the op (a workspace).
  const auto made = [&](TensorType type, const std::string& what, bool kept) {
    if (kept) return saved_extra(res, std::move(type), what);
    res.forward_scratch.push_back({std::move(type), what});
    return -1;
  };
  const double dropout = call.attrs.real("dropout");
  // torch 1.13's generic LSTM, one direction, no dropout: its backward as the engine runs it.
  const bool stepwise = cell == Cell::Lstm && !onednn && backward && call.trainable && d.proj == 0 && d.dirs == 1 &&
                        dropout == 0 && !call.ctx.torch->grad_sum_in_place;
  // The generic GRU likewise, in both versions (any directions, layers and dropout).
  const bool gru_stepwise = cell == Cell::Gru && backward && call.trainable;
  // Under CPU autocast (1.13 and 2.13 alike, measured: validation/ops_saved_recurrent.md) the
  // generic GRU of a float32 model runs its matmuls in the low-precision dtype and keeps h in
  // float32: each step keeps its gates, tanh's result, the clone of h_n and the low copy of
  // h_(t-1) its addmm read (h_0's too) in the low dtype, the clone of h - n in float32; each
  // layer and direction its own low copy of the layer input, and autocast's cached low copies of
  // weight_hh and (when that input needs a gradient) weight_ih; not the float32 zeros, nor the
  // float32 output a layer hands to the next (dropout's mask stays float32). A frozen GRU under
  // autocast is not modelled yet (it takes the float32 rule).
  // 1.13's generic LSTM likewise: each step keeps its 4H gates and the low copy of h_(t-1) in the
  // low dtype, tanh(c_t) and c_(t-1) (c_0: the zeros) in float32. The copies are recorded per
  // layer and direction (AutocastCopies) for the mixed-dtype backward programs to let them go.
  const std::optional<DType> low = (gru_stepwise || stepwise) && dtype == DType::Float32 ? call.ctx.amp : std::nullopt;
  const DType mm = low.value_or(dtype);
  const DType run = onednn_low.value_or(dtype);  // what oneDNN's LSTM hands the next layer
  LstmSteps steps;
  GruSteps gru;
  AutocastCopies copies{low, {}, {}, {}, {}};  // what the programs let go of under autocast, per layer and direction
  steps.zeros_h = gru.zeros_h = made({{states, d.n, d.out}, dtype}, "h_0 (zeros)", for_weights && !low && !onednn_low);
  if (cell == Cell::Lstm) steps.zeros_c = made({{states, d.n, d.hidden}, dtype}, "c_0 (zeros)", backward && !onednn_low);
  std::vector<int> layer_input;  // what each layer's input projection keeps (layer 0: per direction with batch_first)
  if (batch_first && for_weights && !onednn_low)
    for (std::int64_t k = 0; k < (onednn ? 1 : d.dirs); ++k)
      layer_input.push_back(saved_extra(res, {{d.t, d.n, d.input}, mm}, "time-major copy of the input"));
  if (!backward) return res;
  if (!batch_first && low) {
    for (std::int64_t dir = 0; dir < d.dirs; ++dir)
      layer_input.push_back(saved_extra(res, {{d.t, d.n, d.input}, mm}, "the input's low-precision copy"));
  } else if (!batch_first && for_weights && !onednn_low) {
    res.save_input(0);
    layer_input.push_back(static_cast<int>(res.saved.size()) - 1);
  }
  std::vector<std::vector<int>> onednn_kept;  // per layer and direction: what its node keeps
  std::vector<int> dropout_masks;             // per layer but the last
  const std::int64_t t1 = d.t - 1;
  for (std::int64_t l = 0; l < d.layers; ++l) {
    const std::string layer = "layer " + std::to_string(l);
    const bool last = l + 1 == d.layers;
    for (std::int64_t dir = 0; dir < d.dirs; ++dir) {
      const std::string who = layer + (dir == 1 ? " reverse" : "");
      if (onednn) {
        onednn_kept.push_back(onednn_keep(res, d, l, dtype, onednn_low, bias, who));
        continue;
      }
      // h_t for the next step's weight gradient (T - 1 of them) only when the weights train.
      const std::int64_t h_next = for_weights ? t1 : 0;
      const std::int64_t t6 = checked_mul(6, d.t);
      switch (cell) {
        case Cell::Rnn: keep_units(res, d.t, d.n, d.hidden, dtype, who + " step activations"); break;
        case Cell::Gru:
          if (gru_stepwise) {  // the same, step by step, for the program to free them as each step's nodes run
            std::vector<GruStep>& layer_steps = gru.steps.emplace_back();
            for (std::int64_t t = 0; t < d.t; ++t) {
              const std::string step = who + " step " + std::to_string(t);
              GruStep& k = layer_steps.emplace_back();
              k.gates = saved_extra(res, {{d.n, checked_mul(3, d.hidden)}, mm}, step + " gates");
              k.tanh = saved_extra(res, {{d.n, d.hidden}, mm}, step + " tanh of the new gate");
              k.diff = saved_extra(res, {{d.n, d.hidden}, dtype}, step + " h - n (an in-place op's clone)");
              k.hn = saved_extra(res, {{d.n, d.hidden}, mm}, step + " h_n (an in-place op's clone)");
              if (t < t1) k.h = saved_extra(res, {{d.n, d.hidden}, mm}, step + (low ? " h_t's low-precision copy" : " h_t"));
            }
            break;
          }
          keep_units(res, checked_add(t6, h_next), d.n, d.hidden, dtype, who + " step gates and states");
          break;
        case Cell::Lstm:  // 4H gates, tanh(c_t), c_t for the next step (with proj_size, the h before projection too)
          if (stepwise) {  // the same, step by step, for the program to free them as each step's nodes run
            std::vector<LstmStep>& layer_steps = steps.steps.emplace_back();
            for (std::int64_t t = 0; t < d.t; ++t) {
              const std::string step = who + " step " + std::to_string(t);
              LstmStep& k = layer_steps.emplace_back();
              k.gates = saved_extra(res, {{d.n, checked_mul(4, d.hidden)}, mm}, step + " gates");
              k.tanh_c = saved_extra(res, {{d.n, d.hidden}, dtype}, step + " tanh(c_t)");
              if (t == t1) continue;
              k.c = saved_extra(res, {{d.n, d.hidden}, dtype}, step + " c_t");
              k.h = saved_extra(res, {{d.n, d.hidden}, mm}, step + (low ? " h_t's low-precision copy" : " h_t"));
            }
            break;
          }
          keep_units(res, checked_add(checked_add(checked_mul(d.proj > 0 ? 6 : 5, d.t), t1), d.proj > 0 ? 0 : h_next), d.n, d.hidden,
                     dtype, who + " step gates and states");
          if (d.proj > 0) keep_units(res, h_next, d.n, d.proj, dtype, who + " projected h_t");
          break;
      }
      if (low) {  // h_0's copy (step 0's addmm) and the weights' (h_0 needs no gradient: step 0 keeps no weight_hh)
        copies.h0.push_back(saved_extra(res, {{d.n, d.out}, mm}, who + " h_0's low-precision copy"));
        const auto [w_hh, w_ih] =
            autocast_weights(res, *low, gates, l == 0 ? d.input : width, d.out, bias, l > 0 || call.input_requires_grad(), who, d.t > 1);
        copies.w_hh.push_back(w_hh);
        copies.w_ih.push_back(w_ih);
      }
    }
    if (last) continue;
    // What the next layer reads: the dropped-out output and its mask, or the output itself
    // (oneDNN with one direction: its kept output, already counted).
    if (low) {  // each direction of the next layer casts the float32 output (after dropout) itself,
                // which is freed inside the op (its workspace: not counted, as measured)
      if (dropout > 0) dropout_masks.push_back(saved_extra(res, {{d.t, d.n, width}, dtype}, layer + " dropout mask"));
      for (std::int64_t dir = 0; dir < d.dirs; ++dir)
        layer_input.push_back(saved_extra(res, {{d.t, d.n, width}, mm}, layer + " output's low-precision copy"));
    } else if (dropout > 0) {
      dropout_masks.push_back(saved_extra(res, {{d.t, d.n, width}, run}, layer + " dropout mask"));
      if (for_weights) layer_input.push_back(saved_extra(res, {{d.t, d.n, width}, run}, layer + " output after dropout"));
    } else if (for_weights && !(onednn && d.dirs == 1)) {
      layer_input.push_back(saved_extra(res, {{d.t, d.n, width}, run}, layer + " output"));
    }
  }
  steps.layer_input = gru.layer_input = layer_input;
  if (low) copies.input = layer_input;  // one per layer and direction
  steps.autocast = gru.autocast = copies;
  if (gru_stepwise)
    res.backward_program = [d, dtype, batch_first, bias, input_grad = call.input_requires_grad(), in_place = call.ctx.torch->grad_sum_in_place,
                            gru, first_param, dropout_masks](const std::vector<bool>&) {
      return gru_steps_backward(d, dtype, batch_first, bias, input_grad, in_place, gru, first_param, dropout_masks);
    };
  if (stepwise)
    res.backward_program = [d, dtype, batch_first, bias, input_grad = call.input_requires_grad(), steps, first_param](const std::vector<bool>&) {
      return lstm_steps_backward(d, dtype, batch_first, bias, input_grad, steps, first_param);
    };
  if (onednn) {
    const std::int64_t groups = static_cast<std::int64_t>(res.params.size()) / checked_mul(d.layers, d.dirs);
    res.backward_program = [d, dtype, onednn_low, input_grad = call.input_requires_grad(), onednn_kept, dropout_masks, first_param,
                            groups](const std::vector<bool>&) {
      return onednn_backward(d, dtype, onednn_low, input_grad, onednn_kept, dropout_masks, first_param, groups);
    };
  }
  return res;
}

std::vector<AttrDef> sequence_attrs(Cell cell) {
  std::vector<AttrDef> a = {
      AttrDef::integer("input_size", "features of the input; inferred, checked when given").optional().at_least(1),
      AttrDef::integer("hidden_size", "features of the hidden state").needed().at_least(1),
      AttrDef::integer("num_layers", "stacked layers").or_else(1).at_least(1),
      AttrDef::flag("bias", true, "learnable biases bias_ih and bias_hh"),
      AttrDef::flag("batch_first", false, "input and output are [N, L, features] instead of [L, N, features]"),
      AttrDef::real("dropout", "dropout on each layer's output but the last, in training").or_else_real(0.0).between(0, 1),
      AttrDef::flag("bidirectional", false, "a second, reversed direction; outputs concatenated"),
  };
  if (cell == Cell::Rnn) a.push_back(AttrDef::word("nonlinearity", {"tanh", "relu"}, "the activation").or_else_word("tanh"));
  if (cell == Cell::Lstm)
    a.push_back(AttrDef::integer("proj_size", "project h to this size (0: no projection); below hidden_size").or_else(0).at_least(0));
  return a;
}

const char* const kGeneric = "the same in 1.13 and 2.x on the CPU: the generic path's per-step tensors";
const char* const kGruVersions =
    "the same per-step tensors in 1.13 and 2.x on the CPU; backward, step by step, sums n's and h's gradients and (from the "
    "third step) the hidden weights' in place in 2.x, out of place in 1.13";

const bool registered = [] {
  const struct {
    const char* type;
    Cell cell;
    const char* what;
  } kinds[] = {{"RNN", Cell::Rnn, "Elman RNN, h_t = tanh(W_ih x_t + W_hh h_(t-1) + b)"},
               {"GRU", Cell::Gru, "gated recurrent unit"},
               {"LSTM", Cell::Lstm, "long short-term memory"}};
  for (const auto& k : kinds) {
    const Cell cell = k.cell;
    register_layer({
        .type = k.type,
        .summary = std::string(k.what) + " over a sequence; outputs: the sequence, h_n" + (cell == Cell::Lstm ? ", c_n" : ""),
        .attrs = sequence_attrs(cell),
        .infer = [cell](const LayerCall& call) { return infer_sequence(call, cell); },
        .versions = cell == Cell::Lstm ? "on the CPU 2.x runs oneDNN's LSTM (without proj_size), keeping each layer's input, "
                                         "output, last h and c and a workspace; 1.13 the generic path's per-step tensors"
                                       : cell == Cell::Gru ? kGruVersions : kGeneric,
    });
  }
  return true;
}();

}  // namespace
}  // namespace nnmem::layers
