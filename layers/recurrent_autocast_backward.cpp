// What the recurrent layers' backward programs share under CPU autocast (measured:
// validation/ops_saved_recurrent.md): the addmms that ran on autocast's low-precision copies.
#include "recurrent_backward.hpp"

namespace nnmem::layers {

void low_addmm(Program& p, DType low, const LowAddmm& m, int gates_grad, const std::function<void(int)>& take) {
  const int in = m.input_grad ? p.temporary({m.input.shape, low}, "grad of the input's low-precision copy") : -1;
  const TensorType b{{m.rows}, low};
  const int b_first = m.bias && m.bias_first ? p.temporary(b, "grad of the bias's low-precision copy") : -1;
  const int w = p.temporary({{m.rows, m.input.shape.back()}, low}, "grad of the weight's low-precision copy");
  const int b_last = m.bias && !m.bias_first ? p.temporary(b, "grad of the bias's low-precision copy") : -1;
  if (gates_grad >= 0) p.free(gates_grad);
  if (m.input_copy >= 0) p.release(m.input_copy);
  if (m.weight_copy >= 0) p.release(m.weight_copy);
  if (in >= 0) {
    const int back = p.temporary(m.input, "grad of the input");
    p.free(in);
    take(back);
  }
  p.param_grad(m.weight);
  p.free(w);
  p.params_done();
  if (m.bias) {
    p.param_grad(m.weight + 2);
    p.free(m.bias_first ? b_first : b_last);
    p.params_done();
  }
}

}  // namespace nnmem::layers
