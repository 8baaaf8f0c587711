// The losses nnmem models, and the tensors they add to a step:
//   cross_entropy = log_softmax + nll_loss: keeps the [N, C, …] log-probabilities, the int64
//                   target and nll_loss's scalar total_weight;
//   mse           = mse_loss: keeps the model's output and the float target; torch 1.13
//                   computes the mean into the buffer of the squared errors, so the 0-dim
//                   loss holds an output-sized storage (validation/ops_saved.md);
//   mean          = out.mean(): keeps nothing (its backward needs only the size).
// Under autocast cross_entropy and mse run in float32: a float32 copy of a 16-bit output is
// made first, and the loss keeps (mse) or reads (cross_entropy) that copy; a float64 output is
// not cast.
#include "step.hpp"

namespace nnmem::detail {

LossTensors loss_tensors(LossKind loss, const TensorType& output, const SourceLoc& where, const std::string& producer,
                         bool amp, DType float_dtype) {
  LossTensors t;
  if (amp && loss != LossKind::Mean && autocast_eligible(output.dtype) && output.dtype != DType::Float32)
    t.cast = TensorType{output.shape, DType::Float32};
  const TensorType in = t.input(output);
  switch (loss) {
    case LossKind::CrossEntropy: {
      if (output.shape.size() < 2 || !is_floating(output.dtype))
        throw Error(where, "cross_entropy needs a floating-point output of shape [N, C] or [N, C, d1, …] (classes in "
                           "dimension 1); the model's output" + (producer.empty() ? "" : ", " + producer + ",") +
                               " is " + to_string(output.shape) +
                               (is_floating(output.dtype) ? "" : " " + std::string(dtype_name(output.dtype))));
      Shape target = {output.shape[0]};
      target.insert(target.end(), output.shape.begin() + 2, output.shape.end());
      t.target = TensorType{target, DType::Int64};
      t.kept.push_back(in);                          // log_softmax's output
      t.kept.push_back(TensorType{{}, in.dtype});    // nll_loss's total_weight
      t.loss_bytes = dtype_size(in.dtype);
      break;
    }
    case LossKind::Mse:
      t.target = TensorType{output.shape, amp ? float_dtype : output.dtype};
      t.keeps_input = true;
      t.loss_bytes = in.bytes();
      break;
    case LossKind::Mean:
      t.loss_bytes = dtype_size(output.dtype);
      break;
  }
  return t;
}

}  // namespace nnmem::detail
