// The losses nnmem models, and the tensors they add to a step (validation/ops_saved.md for 1.13,
// validation/ops_saved_zoo.md for both versions, which agree on all of them):
//   cross_entropy   = log_softmax + nll_loss: keeps the [N, C, …] log-probabilities, the int64
//                     target and nll_loss's scalar total_weight;
//   nll             = nll_loss on the model's log-probabilities: keeps the output itself, the
//                     target and total_weight;
//   mse, smooth_l1  keep the output and the float target; both compute the mean into the buffer
//                     of the element-wise losses, so the 0-dim loss holds an output-sized storage;
//   bce_with_logits, huber keep the output and the target; their loss is a 4-byte scalar;
//   l1              = (input - target).abs().mean(): keeps the difference (output-sized), not the
//                     target; its backward holds two output-sized temporaries (div, sgn) beside
//                     the output's gradient;
//   mean            = out.mean(): keeps nothing (its backward needs only the size).
// Under autocast every loss but mean runs in float32 (both devices' float32 lists): a float32
// copy of a 16-bit output is made first, and the loss keeps or reads that copy; a float64
// output is not cast. Hugging Face's `logits.float()` (`upcast: true`) makes the same copy with
// or without autocast (validation/probe_lm_loss.py: the same events as autocast's cast).
// cross_entropy's options (validation/ops_saved_transformers.md): ignore_index changes no tensor;
// label_smoothing > 0 adds -(log_probs.sum(1)) masked where the target is ignore_index, and
// averages it over the targets not ignored: it keeps the bool mask [N] and that count (an int64
// scalar), and its backward makes the [N] gradients of the mask and the negation before the two
// [N, C] gradients of the log-probabilities are summed into a third.
#include "step.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace nnmem::detail {

namespace {

// cross_entropy and nll take class scores in dimension 1 and int64 class indices.
TensorType class_target(LossKind loss, const TensorType& output, const SourceLoc& where, const std::string& producer) {
  if (output.shape.size() < 2 || !is_floating(output.dtype))
    throw Error(where, std::string(name_of(loss)) + " needs a floating-point output of shape [N, C] or [N, C, d1, …] "
                       "(classes in dimension 1); the model's output" + (producer.empty() ? "" : ", " + producer + ",") +
                           " is " + to_string(output.shape) +
                           (is_floating(output.dtype) ? "" : " " + std::string(dtype_name(output.dtype))));
  Shape target = {output.shape[0]};
  target.insert(target.end(), output.shape.begin() + 2, output.shape.end());
  return TensorType{target, DType::Int64};
}

const std::vector<AttrDef>& loss_attr_defs(LossKind loss) {
  static const std::vector<AttrDef> none;
  static const std::vector<AttrDef> nll = {
      AttrDef::integer("ignore_index", "targets of this class add nothing (PyTorch's and Hugging Face's -100)").or_else(-100)};
  static const std::vector<AttrDef> cross_entropy = {
      nll.front(),
      AttrDef::real("label_smoothing", "the share of the loss spread over all classes").or_else_real(0.0).between(0.0, 1.0),
      AttrDef::flag("upcast", false, "logits.float() first, as Hugging Face's losses do: a 16-bit output copied to float32")};
  return loss == LossKind::CrossEntropy ? cross_entropy : loss == LossKind::Nll ? nll : none;
}

}  // namespace

LossOptions loss_options(LossKind loss, const LossSpec& spec) {
  LossOptions o;
  if (name_of(loss) != spec.kind) return o;
  LayerSpec as_layer;  // checked as a layer's attributes are: "cross_entropy 'loss': label_smoothing must ..."
  as_layer.name = "loss";
  as_layer.type = spec.kind;
  as_layer.loc = spec.kind_loc;
  as_layer.attrs = spec.attrs;
  const Attrs attrs(loss_attr_defs(loss), as_layer);
  if (loss == LossKind::CrossEntropy || loss == LossKind::Nll) o.ignore_index = attrs.integer("ignore_index");
  if (loss == LossKind::CrossEntropy) {
    o.label_smoothing = attrs.real("label_smoothing");
    o.upcast = attrs.flag("upcast");
  }
  return o;
}

LossTensors loss_tensors(LossKind loss, const TensorType& output, const SourceLoc& where, const std::string& producer,
                         bool amp, DType float_dtype, const LossOptions& options, const TorchProfile& torch) {
  if (!is_floating(output.dtype))  // PyTorch's losses and mean() take floating-point values only
    throw Error(where, std::string(name_of(loss)) + " needs a floating-point output; the model's output" +
                           (producer.empty() ? "" : ", " + producer + ",") + " is " + std::string(dtype_name(output.dtype)));
  LossTensors t;
  if ((amp || options.upcast) && loss != LossKind::Mean && autocast_eligible(output.dtype) && output.dtype != DType::Float32)
    t.cast = TensorType{output.shape, DType::Float32};
  const TensorType in = t.input(output);
  const TensorType float_target{output.shape, amp ? float_dtype : output.dtype};
  const std::int64_t scalar = dtype_size(in.dtype);
  switch (loss) {
    case LossKind::CrossEntropy:
      t.target = class_target(loss, output, where, producer);
      t.keeps_target = true;
      t.kept.push_back(in);                          // log_softmax's output
      t.kept.push_back(TensorType{{}, in.dtype});    // nll_loss's total_weight
      if (options.label_smoothing > 0.0) {
        // Backward lets the first go with the quotient's gradient, the rest with the masked
        // smoothed loss's gradient (simulate.cpp).
        t.smoothed = TensorType{t.target->shape, in.dtype};  // -(log_probs.sum(1)), per position
        const TensorType mask{t.target->shape, DType::Bool};  // target == ignore_index
        if (torch.smoothing_masked_select) t.kept.insert(t.kept.end(), {*t.smoothed, mask, mask});  // and ~mask
        else t.kept.insert(t.kept.end(), {TensorType{{}, DType::Int64}, mask});  // the count not ignored, sum's first
      }
      t.loss_bytes = scalar;
      break;
    case LossKind::Nll:
      t.target = class_target(loss, output, where, producer);
      t.keeps_target = true;
      t.keeps_input = true;
      t.kept.push_back(TensorType{{}, in.dtype});    // total_weight
      t.loss_bytes = scalar;
      break;
    case LossKind::Mse:
    case LossKind::SmoothL1:
    case LossKind::BceWithLogits:
    case LossKind::Huber:
      t.target = float_target;
      t.keeps_input = true;
      t.keeps_target = true;
      t.loss_bytes = loss == LossKind::Mse || loss == LossKind::SmoothL1 ? in.bytes() : scalar;
      break;
    case LossKind::L1:
      t.target = float_target;
      t.kept.push_back(in);                          // input - target, kept by abs
      t.backward_scratch = {in, in};                 // mean's and abs's temporaries
      t.loss_bytes = scalar;
      break;
    case LossKind::Mean:
      t.loss_bytes = dtype_size(output.dtype);
      break;
  }
  return t;
}

std::vector<LossTerm> loss_terms(const Graph& graph, const std::optional<LossKind>& override, bool training) {
  const ModelSpec& spec = graph.spec;
  // Each output's place, found by name (a search of the list per loss took 20,000 losses 1 s).
  std::unordered_map<std::string_view, std::size_t> place;
  for (std::size_t i = spec.outputs.size(); i-- > 0;) place[spec.outputs[i]] = i;  // the first of repeats
  const auto index_of = [&](const std::string& name) { return graph.outputs.at(place.at(name)); };
  std::vector<LossTerm> terms;
  if (override && spec.losses.size() > 1)
    throw Error(spec.losses[1].loc, "--loss names one loss, and this spec sums " + std::to_string(spec.losses.size()) +
                                        "; change their kinds in the spec");
  for (const LossSpec& l : spec.losses) {
    const LossKind kind = override.value_or(*parse_loss(l.kind));
    terms.push_back({kind, l.output.empty() ? -1 : index_of(l.output), l.output, l.weight, l.kind_loc, loss_options(kind, l)});
  }
  if (terms.empty()) terms.push_back({override.value_or(LossKind::Mean), -1, "", std::nullopt, spec.loc, LossOptions{}});
  for (LossTerm& t : terms) {
    if (t.output >= 0) continue;
    if (training && graph.outputs.size() != 1)
      throw Error(spec.output_locs.at(1), "training needs a single output for its loss, or a loss per output "
                                          "({output: NAME, type: TYPE} in a 'loss' list); this model returns " +
                                              std::to_string(graph.outputs.size()));
    t.output = graph.outputs.front();
  }
  return terms;
}

}  // namespace nnmem::detail
