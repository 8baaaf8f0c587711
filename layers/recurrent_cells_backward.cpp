// The cells' backward programs (LSTMCell, GRUCell), node by node as PyTorch's engine runs them.
#include <utility>

#include "recurrent_backward.hpp"

namespace nnmem::layers {
namespace {

// An addmm node's weight and bias gradients (parameters `weight` and `weight` + 2).
void weight_grads(Program& p, int weight) {
  p.param_grad(weight);
  p.param_grad(weight + 2);
}

}  // namespace

// GRUCell's backward as the engine runs it (measured, ops_saved_recurrent.md): h' = n + z·(h − n),
// n = tanh(i_n + r·h_n). MulBackward0 (z and h − n's gradients), SubBackward0 (−n's; n's
// gradient is it plus h''s, summed out of place in 1.13, in place in 2.x), TanhBackward0,
// MulBackward0 (r's and h_n's), the two sigmoids, then h's gates split and addmm (h's gradient:
// what came through h − n plus the addmm's), x's gates split and addmm.
std::vector<BackwardEvent> gru_cell_backward(const CellBackward& b, int gates_kept, int tanh_kept, int diff_kept, int hn_kept) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const int gz = p.temporary(b.nh(), "grad of z");
  const int gdiff = p.temporary(b.nh(), "grad of h - n");
  p.release(diff_kept);
  const int gneg = p.temporary(b.nh(), "grad of -n");
  int gn = -1;  // n's gradient; -1: h''s, into which 2.x adds -n's
  if (b.sum_in_place) {
    p.free(gneg);
  } else {
    gn = p.temporary(b.nh(), "grad of n");
    p.free(gneg);
    p.release_grad_out(0);
  }
  const int gnp = p.temporary(b.nh(), "grad of n's pre-activation");
  gn < 0 ? p.release_grad_out(0) : p.free(gn);
  p.release(tanh_kept);
  const int gr = p.temporary(b.nh(), "grad of r");
  const int ghn = p.temporary(b.nh(), "grad of h_n");
  p.release(hn_kept);
  const int grp = p.temporary(b.nh(), "grad of r's pre-activation");
  p.free(gr);
  const int gzp = p.temporary(b.nh(), "grad of z's pre-activation");
  p.free(gz);
  p.release(gates_kept);
  const int gates_h = p.temporary(b.nh(3), "grad of h's gates");  // h's gates split, then its addmm
  p.free(ghn);
  const int mm = b.h_grad ? p.temporary(b.nh(), "grad of h through weight_hh") : -1;
  weight_grads(p, 1);
  p.free(gates_h);
  if (b.saved_h >= 0) p.release(b.saved_h);
  if (!b.h_grad) {
    p.free(gdiff);
  } else if (b.sum_in_place) {  // added into h - n's gradient, which is h's
    p.free(mm);
    p.free(gdiff);
    p.input_grad(1);
  } else {
    p.input_grad(1);
    p.free(mm);
    p.free(gdiff);
  }
  p.params_done();
  const int gates_x = p.temporary(b.nh(3), "grad of x's gates");  // x's gates split, then its addmm
  p.free(grp);
  p.free(gzp);
  p.free(gnp);
  p.input_grad(0);
  weight_grads(p, 0);
  p.free(gates_x);
  p.params_done();
  return events;
}

// LSTMCell's backward as the engine runs it (measured, ops_saved_recurrent.md): h' = o·tanh(c'),
// c' = f·c + i·g. MulBackward0 (o's and tanh(c')'s gradients), TanhBackward0 (its part of c''s
// gradient, summed with c''s own when c' is read elsewhere: out of place in 1.13, in place in
// 2.x), the two MulBackward0 of c' (f, c, i, g), the four gates' nodes, the split, then x's
// addmm (made last) and h's; the gates' gradient and h are freed after both.
std::vector<BackwardEvent> lstm_cell_backward(const CellBackward& b, const std::vector<bool>& with_grad, int saved_c, int gates_kept,
                                              int tanh_kept, bool c_grad) {
  std::vector<BackwardEvent> events;
  Program p(events);
  std::vector<int> gate_grads;
  int gc = -1;  // c''s gradient; -1: output 1's (into which 2.x adds)
  if (with_grad[0]) {
    gate_grads.push_back(p.temporary(b.nh(), "grad of o"));
    const int gt = p.temporary(b.nh(), "grad of tanh(c')");
    p.release_grad_out(0);
    gc = p.temporary(b.nh(), "grad of c' through tanh");
    p.free(gt);
    p.release(tanh_kept);
    if (with_grad.size() > 1 && with_grad[1]) {
      if (b.sum_in_place) {
        p.free(std::exchange(gc, -1));
      } else {
        const int sum = p.temporary(b.nh(), "grad of c'");
        p.free(gc);
        p.release_grad_out(1);
        gc = sum;
      }
    }
  }
  gate_grads.push_back(p.temporary(b.nh(), "grad of f"));
  if (c_grad) p.input_grad(2);
  gate_grads.push_back(p.temporary(b.nh(), "grad of i"));
  gate_grads.push_back(p.temporary(b.nh(), "grad of g"));
  gc < 0 ? p.release_grad_out(1) : p.free(gc);
  if (saved_c >= 0) p.release(saved_c);
  for (int& g : gate_grads) {  // each gate's node: its pre-activation's gradient
    const int pre = p.temporary(b.nh(), "grad of a gate's pre-activation");
    p.free(std::exchange(g, pre));
  }
  p.release(gates_kept);
  if (!with_grad[0]) p.release(tanh_kept);
  const int gates = p.temporary(b.nh(4), "grad of the gates");
  for (int g : gate_grads) p.free(g);
  p.input_grad(0);
  weight_grads(p, 0);
  p.params_done();
  if (b.h_grad) p.input_grad(1);
  weight_grads(p, 1);
  p.free(gates);
  if (b.saved_h >= 0) p.release(b.saved_h);
  p.params_done();
  return events;
}

}  // namespace nnmem::layers
