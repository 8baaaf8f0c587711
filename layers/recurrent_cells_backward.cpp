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

// Under autocast, a float32 gradient `grad` cast down to the gates' dtype (and freed).
int cast_down(Program& p, const CellBackward& b, int grad, const char* what) {
  if (!b.low) return grad;
  const int low = p.temporary(b.low_nh(), what);
  p.free(grad);
  return low;
}

// Under autocast, x's addmm on the copies (layers/recurrent_autocast_backward.cpp), `gates`
// (its gates' gradient) freed, or held with -1.
void low_x_addmm(Program& p, const CellBackward& b, std::int64_t rows, int gates) {
  low_addmm(p, *b.low, {{{b.n, b.input}, b.dtype}, rows, b.x_copy, b.w_ih_copy, 0, b.x_grad, b.bias, false}, gates, [&](int grad) {
    p.free(grad);
    p.input_grad(0);
  });
}

}  // namespace

// GRUCell's backward as the engine runs it (measured, ops_saved_recurrent.md): h' = n + z·(h − n),
// n = tanh(i_n + r·h_n). MulBackward0 (z and h − n's gradients), SubBackward0 (−n's; n's
// gradient is it plus h''s, summed out of place in 1.13, in place in 2.x), TanhBackward0,
// MulBackward0 (r's and h_n's), the two sigmoids, then h's gates split and addmm (h's gradient:
// what came through h − n plus the addmm's), x's gates split and addmm.
// Under autocast (as one step of the GRU: recurrent_backward.cpp) AddBackward0 casts h''s
// gradient down for n, z's and −n's are made in float32 and cast down, h''s own is freed once
// MulBackward0 read it, and the addmms run on the copies, each gradient cast back.
std::vector<BackwardEvent> gru_cell_backward(const CellBackward& b, int gates_kept, int tanh_kept, int diff_kept, int hn_kept) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const int gn_cast = b.low ? p.temporary(b.low_nh(), "grad of n (AddBackward0's cast)") : -1;
  const int gz32 = p.temporary(b.nh(), "grad of z");
  const int gdiff = p.temporary(b.nh(), "grad of h - n");
  const int gz = cast_down(p, b, gz32, "grad of z, cast");
  p.release(diff_kept);
  if (b.low) p.release_grad_out(0);
  const int gneg = cast_down(p, b, p.temporary(b.nh(), "grad of -n"), "grad of -n, cast");
  if (b.low && !b.h_grad) p.free(gdiff);
  int gn = gn_cast;  // n's gradient; -1: h''s, into which 2.x adds -n's
  if (b.sum_in_place) {
    p.free(gneg);
  } else {
    gn = p.temporary(b.low_nh(), "grad of n");
    p.free(gneg);
    gn_cast < 0 ? p.release_grad_out(0) : p.free(gn_cast);
  }
  const int gnp = p.temporary(b.low_nh(), "grad of n's pre-activation");
  gn < 0 ? p.release_grad_out(0) : p.free(gn);
  p.release(tanh_kept);
  const int gr = p.temporary(b.low_nh(), "grad of r");
  const int ghn = p.temporary(b.low_nh(), "grad of h_n");
  p.release(hn_kept);
  const int grp = p.temporary(b.low_nh(), "grad of r's pre-activation");
  p.free(gr);
  const int gzp = p.temporary(b.low_nh(), "grad of z's pre-activation");
  p.free(gz);
  p.release(gates_kept);
  const int gates_h = p.temporary(b.low_nh(3), "grad of h's gates");  // h's gates split, then its addmm
  p.free(ghn);
  if (b.low) {  // h's gradient: h - n's plus the addmm's, cast back (in place in 2.x)
    low_addmm(p, *b.low, {b.nh(), checked_mul(3, b.h), b.saved_h, b.w_hh_copy, 1, b.h_grad, b.bias, false}, gates_h, [&](int grad) {
      if (b.sum_in_place) {
        p.free(grad);
        p.free(gdiff);
        p.input_grad(1);
      } else {
        p.input_grad(1);
        p.free(grad);
        p.free(gdiff);
      }
    });
  } else {
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
  }
  const int gates_x = p.temporary(b.low_nh(3), "grad of x's gates");  // x's gates split, then its addmm
  p.free(grp);
  p.free(gzp);
  p.free(gnp);
  if (b.low) {
    low_x_addmm(p, b, checked_mul(3, b.h), gates_x);
    return events;
  }
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
// Under autocast (as one step of 1.13's LSTM: recurrent_backward.cpp) o's and f's gradients are
// made in float32 and cast down, c''s is cast down for i·g by AddBackward0, and the addmms run
// on the copies, each gradient cast back.
std::vector<BackwardEvent> lstm_cell_backward(const CellBackward& b, const std::vector<bool>& with_grad, int saved_c, int gates_kept,
                                              int tanh_kept, bool c_grad) {
  std::vector<BackwardEvent> events;
  Program p(events);
  std::vector<int> gate_grads;
  int gc = -1;  // c''s gradient; -1: output 1's (into which 2.x adds)
  if (with_grad[0]) {
    const int go = p.temporary(b.nh(), "grad of o");
    const int gt = p.temporary(b.nh(), "grad of tanh(c')");
    gate_grads.push_back(cast_down(p, b, go, "grad of o, cast"));
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
  if (b.low) {  // AddBackward0 casts c''s gradient for i·g; f·c takes it as it is
    const int gc_low = p.temporary(b.low_nh(), "grad of c', cast");
    gate_grads.push_back(p.temporary(b.low_nh(), "grad of i"));
    gate_grads.push_back(p.temporary(b.low_nh(), "grad of g"));
    p.free(gc_low);
    const int gf = p.temporary(b.nh(), "grad of f");
    if (c_grad) p.input_grad(2);
    gate_grads.push_back(cast_down(p, b, gf, "grad of f, cast"));
  } else {
    gate_grads.push_back(p.temporary(b.nh(), "grad of f"));
    if (c_grad) p.input_grad(2);
    gate_grads.push_back(p.temporary(b.nh(), "grad of i"));
    gate_grads.push_back(p.temporary(b.nh(), "grad of g"));
  }
  gc < 0 ? p.release_grad_out(1) : p.free(gc);
  if (saved_c >= 0) p.release(saved_c);
  for (int& g : gate_grads) {  // each gate's node: its pre-activation's gradient
    const int pre = p.temporary(b.low_nh(), "grad of a gate's pre-activation");
    p.free(std::exchange(g, pre));
  }
  p.release(gates_kept);
  if (!with_grad[0]) p.release(tanh_kept);
  const int gates = p.temporary(b.low_nh(4), "grad of the gates");
  for (int g : gate_grads) p.free(g);
  if (b.low) {  // x's addmm, then h's (h's gradient: the addmm's, cast back)
    low_x_addmm(p, b, checked_mul(4, b.h), -1);
    low_addmm(p, *b.low, {b.nh(), checked_mul(4, b.h), b.saved_h, b.w_hh_copy, 1, b.h_grad, b.bias, false}, gates, [&](int grad) {
      p.free(grad);
      p.input_grad(1);
    });
    return events;
  }
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
