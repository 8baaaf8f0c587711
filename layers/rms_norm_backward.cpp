// RMSNorm's backward program (rms_norm_backward.hpp).
#include "rms_norm_backward.hpp"

#include "backward_program.hpp"

namespace nnmem::layers {

std::vector<BackwardEvent> rms_norm_backward(const RmsBackward& b) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const bool upcast = b.x.dtype != b.wide.dtype;
  const bool t5_upcast = b.x_itself >= 0;
  // The weight's product, in its operands' promoted dtype (float32 beside a float32 weight;
  // nn.RMSNorm's normalised input is float32).
  const TensorType product_type{b.x.shape, promote(b.weight.dtype, b.normalised)};
  int grad = -1;
  if (b.cast_last) {
    grad = p.temporary(b.wide, "grad of the output (float32)");
    p.release_grad_out(0);
  }
  int normalised_grad = p.temporary(product_type, "grad of the normalised input");
  const int product = p.temporary(product_type, "grad times the normalised input");
  // (a 16-bit weight beside a float32 product: its gradient summed in float32, then cast)
  const int weight_grad = b.weight.dtype == product_type.dtype ? -1
                          : p.temporary({b.weight.shape, product_type.dtype}, "grad of the weight (float32)");
  if (weight_grad < 0) p.param_grad(0);
  p.free(product);
  if (weight_grad >= 0) p.param_grad(0);
  if (b.normalised != product_type.dtype) {  // the normalised input's gradient in its own dtype
    const int cast = p.temporary({b.x.shape, b.normalised}, "grad of the normalised input, cast");
    p.free(normalised_grad);
    normalised_grad = cast;
  }
  p.release(b.normalised_entry);
  if (grad >= 0) p.free(grad);
  else p.release_grad_out(0);
  if (weight_grad >= 0) p.free(weight_grad);
  p.params_done();  // the weight's AccumulateGrad runs as soon as its gradient is complete
  if (b.normalised != DType::Float32) {  // the cast of x * r (float32, r is) to it
    const int wide = p.temporary(b.wide, "grad of the normalised input (float32)");
    p.free(normalised_grad);
    normalised_grad = wide;
  }
  // h's gradient through h * r: in float32 a part of the input's own, else a float32 tensor
  // the pow's part is added into; T5's x * r on a 16-bit x: x's first part, cast to its dtype
  const int h_grad = upcast ? p.temporary(b.wide, t5_upcast ? "grad of the input through x * rstd (float32)"
                                                            : "grad of the input (float32)")
                            : -1;
  if (!upcast) p.input_grad(0);
  const int by_h = p.temporary(b.wide, "grad times the input");
  if (t5_upcast) {
    p.input_grad(0);
    p.free(h_grad);
  }
  const int rstd_grad = p.temporary(b.stats, "grad of rstd");
  p.free(by_h);
  p.free(normalised_grad);
  if (t5_upcast) p.release(b.x_itself);
  if (!upcast || t5_upcast) p.input_grads_out();  // as the product's node returns: added into a gradient x has
  const int cube = p.temporary(b.stats, "rstd cubed");
  const int scaled = p.temporary(b.stats, "grad times -0.5");
  const int variance_grad = p.temporary(b.stats, "grad of the variance");
  p.free(cube);
  p.free(scaled);
  p.free(rstd_grad);
  p.release(b.rstd);
  const int square_grad = p.temporary(b.wide, "grad of the input squared");
  p.free(variance_grad);
  if (b.squared >= 0) p.release(b.squared);
  const int power = p.temporary(b.wide, "the input to the power 1");
  const int twice = p.temporary(b.wide, "2 * the input");
  // The pow's part of h's gradient: in float32 x's own again, added into it as the node returns;
  // for a 16-bit x, added into the float32 part before the cast back (T5's: all of h's).
  // (1.13 makes the sum anew once the pow's node has let go of h)
  const bool sum_at_h = upcast && !t5_upcast;
  int pow_grad = upcast ? p.temporary(b.wide, "grad of the input through pow") : -1;
  if (!upcast) p.input_grad(0);
  p.free(power);
  p.free(twice);
  p.free(square_grad);
  if (sum_at_h && b.sum_in_place) p.free(pow_grad);
  p.release(b.input);
  if (upcast) {  // x's gradient in its dtype
    if (sum_at_h && !b.sum_in_place) {
      const int sum = p.temporary(b.wide, "grad of the input (float32), summed");
      p.free(h_grad);
      p.free(pow_grad);
      pow_grad = sum;
    }
    p.input_grad(0);
    p.free(sum_at_h && b.sum_in_place ? h_grad : pow_grad);
  }
  return events;
}

}  // namespace nnmem::layers
