// The recurrent layers' backward programs, node by node as PyTorch's engine runs them.
#include "recurrent_backward.hpp"

#include <utility>

namespace nnmem::layers {
namespace {

// The steps' summed weight_hh gradient becomes weight_hh's .grad, then the summed bias_hh's
// bias_hh's (parameters first_param + 1 and + 3: weight_ih, weight_hh, bias_ih, bias_hh);
// the generic LSTM's and GRU's backward end their hidden-to-hidden sums alike. Under autocast
// the sums are the low-precision copies' gradients, each cast back by its ToCopyBackward0 and
// handed over before the next.
void hand_over_hidden(Program& p, int w_sum, int b_sum, int first_param, bool bias, bool low) {
  const auto hand = [&](int sum, int param) {
    if (low) {
      p.param_grad(param);
      p.free(sum);
      p.params_done();
    } else {
      p.free(sum);
      p.param_grad(param);
    }
  };
  hand(w_sum, first_param + 1);
  if (bias) hand(b_sum, first_param + 3);
  if (!low) p.params_done();
}

// Under autocast, a float32 gradient `grad` cast down to the gates' dtype `low` (and freed);
// without, `grad` itself.
int cast_down(Program& p, const AutocastCopies& c, const TensorType& low, int grad, const char* what) {
  if (!c.low) return grad;
  const int cast = p.temporary(low, what);
  p.free(grad);
  return cast;
}

}  // namespace

// torch 1.13's generic LSTM (one direction, no dropout), as the engine runs it (measured,
// ops_saved_recurrent.md), each layer from the top, its steps from the last: MulBackward0 (o,
// tanh(c_t)), TanhBackward0 (c_t's gradient, plus what step t + 1 gave it, out of place), the
// two MulBackward0 of c_t (f, c_(t-1), i, g), the gates' nodes, the split, then h's addmm:
// h_(t-1)'s gradient (plus the output's slice, out of place: the last slice used frees the
// incoming gradient), and weight_hh's and bias_hh's, each summed out of place with the steps'
// before. Then the stacked gates' gradients [T, N, 4H] and the input projection's addmm (with
// batch_first, layer 0's bias first): the layer input's gradient, weight_ih's and bias_ih's.
// Under autocast the gates' nodes and the addmms run in the low dtype, h and c in float32: o's
// and f's gradients are cast down (as is c_t's for i·g, by AddBackward0), the addmm's gradient
// of h_(t-1)'s copy cast back (ToCopyBackward0, after weight_hh's sum), the copies let go as
// their last reader runs (weight_hh's at step 1), and the projection runs on the copies.
std::vector<BackwardEvent> lstm_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, const LstmSteps& kept,
                                               const std::vector<int>& first_param) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const AutocastCopies& c = kept.autocast;
  const DType g = c.low.value_or(dtype);  // the gates' dtype
  const TensorType nh{{d.n, d.hidden}, dtype}, nhg{{d.n, d.hidden}, g};
  const TensorType w_hh{{checked_mul(4, d.hidden), d.hidden}, g};
  const TensorType b{{checked_mul(4, d.hidden)}, g};
  int incoming = -1;  // the layer output's gradient; -1: the module output's
  const auto release_incoming = [&] { incoming < 0 ? p.release_grad_out(0) : p.free(incoming); };
  for (std::int64_t l = d.layers; l-- > 0;) {
    const std::vector<LstmStep>& steps = kept.steps[static_cast<std::size_t>(l)];
    const std::size_t at = static_cast<std::size_t>(l);
    const int fp = first_param[at];
    int h_grad = -1, c_carry = -1, w_sum = -1, b_sum = -1;
    std::vector<int> step_gates;
    for (std::int64_t t = d.t; t-- > 0;) {
      const LstmStep& s = steps[static_cast<std::size_t>(t)];
      const int go = p.temporary(nh, "grad of o");
      const int gtc = p.temporary(nh, "grad of tanh(c_t)");
      std::vector<int> gs = {cast_down(p, c, nhg, go, "grad of o, cast")};
      if (h_grad >= 0) p.free(h_grad);
      if (d.t == 1) release_incoming();
      int gc = p.temporary(nh, "grad of c_t through tanh");
      p.free(gtc);
      p.release(s.tanh_c);
      if (c_carry >= 0) {
        const int sum = p.temporary(nh, "grad of c_t");
        p.free(gc);
        p.free(c_carry);
        gc = sum;
      }
      if (c.low) {  // AddBackward0 casts c_t's gradient for i·g (low); f·c_(t-1) takes it as it is
        const int gc_low = p.temporary(nhg, "grad of c_t, cast");
        gs.push_back(p.temporary(nhg, "grad of i"));
        gs.push_back(p.temporary(nhg, "grad of g"));
        p.free(gc_low);
        const int gf = p.temporary(nh, "grad of f");
        c_carry = t > 0 ? p.temporary(nh, "grad of c_(t-1)") : -1;
        gs.push_back(cast_down(p, c, nhg, gf, "grad of f, cast"));
      } else {
        gs.push_back(p.temporary(nh, "grad of f"));
        c_carry = t > 0 ? p.temporary(nh, "grad of c_(t-1)") : -1;
        gs.push_back(p.temporary(nh, "grad of i"));
        gs.push_back(p.temporary(nh, "grad of g"));
      }
      p.free(gc);
      if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].c);
      else if (l == 0 && kept.zeros_c >= 0) p.release(kept.zeros_c);
      for (int& gate : gs) {
        const int pre = p.temporary(nhg, "grad of a gate's pre-activation");
        p.free(std::exchange(gate, pre));
      }
      p.release(s.gates);
      step_gates.push_back(p.temporary({{d.n, checked_mul(4, d.hidden)}, g}, "grad of a step's gates"));
      for (int gate : gs) p.free(gate);
      const int mm = t > 0 ? p.temporary(nhg, "grad of h_(t-1) through weight_hh") : -1;
      const int w_new = p.temporary(w_hh, "grad of weight_hh at a step");
      const int b_new = bias ? p.temporary(b, "grad of bias_hh at a step") : -1;
      if (c.low && t == 1 && c.w_hh[at] >= 0) p.release(c.w_hh[at]);  // step 0 keeps no weight_hh
      if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].h);
      else if (c.low) p.release(c.h0[at]);
      else if (l == 0 && kept.zeros_h >= 0) p.release(kept.zeros_h);
      const int b_next = b_sum >= 0 ? p.temporary(b, "grad of bias_hh, summed") : b_new;
      if (b_sum >= 0) p.free(b_new);
      if (mm >= 0 && !c.low) {
        h_grad = p.temporary(nh, "grad of h_(t-1)");
        if (t == 1) release_incoming();
        p.free(mm);
      }
      if (b_sum >= 0) p.free(b_sum);
      b_sum = b_next;
      if (w_sum >= 0) {
        const int sum = p.temporary(w_hh, "grad of weight_hh, summed");
        p.free(w_sum);
        p.free(w_new);
        w_sum = sum;
      } else {
        w_sum = w_new;
      }
      if (mm >= 0 && c.low) {  // ToCopyBackward0 of h_(t-1)'s copy, then the output's slice added
        const int back = p.temporary(nh, "grad of h_(t-1) through weight_hh, cast");
        p.free(mm);
        h_grad = p.temporary(nh, "grad of h_(t-1)");
        if (t == 1) release_incoming();
        p.free(back);
      }
    }
    hand_over_hidden(p, w_sum, b_sum, fp, bias, c.low.has_value());
    const int stacked = p.temporary({{d.t, d.n, checked_mul(4, d.hidden)}, g}, "grad of the stacked gates");
    for (int gs : step_gates) p.free(gs);
    int grad_in = -1;
    const TensorType layer_in{{d.t, d.n, l == 0 ? d.input : checked_mul(d.dirs, d.hidden)}, dtype};
    const bool bias_first = l == 0 && batch_first;  // AddBackward0, then MmBackward0
    if (c.low) {  // on the copies; the layer input's gradient, cast back, is the next layer's incoming
      low_addmm(p, *c.low, {layer_in, checked_mul(4, d.hidden), c.input[at], c.w_ih[at], fp, l > 0 || input_grad, bias, bias_first}, stacked,
                [&](int grad) { l > 0 ? void(grad_in = grad) : (p.free(grad), p.input_grad(0)); });
      incoming = grad_in;
      continue;
    }
    if (l > 0)
      grad_in = p.temporary(layer_in, "grad of layer " + std::to_string(l) + "'s input");
    else if (input_grad)
      p.input_grad(0);
    if (bias && bias_first) p.param_grad(fp + 2);
    p.param_grad(fp);
    if (bias && !bias_first) p.param_grad(fp + 2);
    p.free(stacked);
    p.release(kept.layer_input[static_cast<std::size_t>(l)]);
    p.params_done();
    incoming = grad_in;
  }
  return events;
}

// The generic GRU (both versions), as the engine runs it (measured, ops_saved_recurrent.md), each layer
// from the top, one direction after the other, its steps from the last: h' = (h − n)·z + n.
// MulBackward0 (h − n's and z's gradients), SubBackward0 (−n's; h_(t-1)'s gradient is the
// output's slice plus h − n's, n's is −n's plus h''s, out of place (2.x: n's in place unless
// h''s is the output's slice); the last slice used frees the incoming gradient), TanhBackward0, MulBackward0 (h_n's and r's), the sigmoids, h's
// gates split and addmm (h_(t-1)'s gradient plus the addmm's, in place in 2.x; weight_hh's and
// bias_hh's summed over the steps), x's gates split, held until the direction's steps are done. Then the
// stacked gates' gradients and the input projection (as the LSTM's). A lower layer's output
// gradient: the directions' sum (out of place in both versions: measured), then dropout's
// backward (times the mask).
// Under autocast the gates' nodes and the addmms run in the low dtype, h in float32:
// AddBackward0 casts h''s gradient down for n (n's sum with −n's then in place in 2.x, out of
// place in 1.13), z's and −n's gradients are made in float32 and cast down, h''s own is freed
// once MulBackward0 read it; the addmm's gradient of h_(t-1)'s copy is cast back
// (ToCopyBackward0, after weight_hh's sum) and added to the output's part; weight_hh's and
// bias_hh's sums are cast back once, after step 0's sum; the copies are let go as their last
// reader runs (weight_hh's at step 1), and each direction's projection casts its input's
// gradient back and adds it to the other direction's at once (in place in 2.x).
std::vector<BackwardEvent> gru_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, bool in_place,
                                              const GruSteps& kept, const std::vector<int>& first_param, const std::vector<int>& masks) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const AutocastCopies& c = kept.autocast;
  const DType g = c.low.value_or(dtype);  // the gates' dtype
  const TensorType nh{{d.n, d.hidden}, dtype}, nhg{{d.n, d.hidden}, g}, nh3{{d.n, checked_mul(3, d.hidden)}, g};
  const TensorType w_hh{{checked_mul(3, d.hidden), d.hidden}, g};
  const TensorType b{{checked_mul(3, d.hidden)}, g};
  int incoming = -1;  // the layer output's gradient; -1: the module output's
  for (std::int64_t l = d.layers; l-- > 0;) {
    const std::int64_t layer_in = l == 0 ? d.input : checked_mul(d.dirs, d.hidden);
    std::vector<int> grads_in;  // the layer input's gradient, per direction
    for (std::int64_t dir = 0; dir < d.dirs; ++dir) {
      const std::size_t at = static_cast<std::size_t>(l * d.dirs + dir);
      const bool last_dir = dir + 1 == d.dirs;
      const std::vector<GruStep>& steps = kept.steps[at];
      const int fp = first_param[at];
      int h_grad = -1, w_sum = -1, b_sum = -1;
      std::vector<int> step_gates;
      for (std::int64_t t = d.t; t-- > 0;) {
        const GruStep& s = steps[static_cast<std::size_t>(t)];
        const int gn_cast = c.low ? p.temporary(nhg, "grad of n (AddBackward0's cast)") : -1;
        const int gdiff = p.temporary(nh, "grad of h - n");
        const int gz = cast_down(p, c, nhg, p.temporary(nh, "grad of z"), "grad of z, cast");
        p.release(s.diff);
        if (c.low && h_grad >= 0) p.free(std::exchange(h_grad, -1));
        const int gneg = cast_down(p, c, nhg, p.temporary(nh, "grad of -n"), "grad of -n, cast");
        int h_sum = -1;
        if (t > 0) {
          h_sum = p.temporary(nh, "grad of h_(t-1), the output's part");
          if (last_dir && t == 1) incoming < 0 ? p.release_grad_out(0) : p.free(incoming);
        } else {
          p.free(gdiff);
        }
        if (d.t == 1 && last_dir) incoming < 0 ? p.release_grad_out(0) : p.free(incoming);
        // n's gradient: h''s (under autocast, its cast) plus -n's, into it in place in 2.x
        // unless it is a view (the output's slice at the last step).
        int gn = c.low ? gn_cast : h_grad;
        if (in_place && gn >= 0) {
          p.free(gneg);
        } else {
          gn = p.temporary(nhg, "grad of n");
          p.free(gneg);
          if (gn_cast >= 0) p.free(gn_cast);
        }
        if (t > 0) p.free(gdiff);
        if (h_grad >= 0 && gn != h_grad) p.free(h_grad);
        const int gnp = p.temporary(nhg, "grad of n's pre-activation");
        p.free(gn);
        p.release(s.tanh);
        const int ghn = p.temporary(nhg, "grad of h_n");
        const int gr = p.temporary(nhg, "grad of r");
        p.release(s.hn);
        const int grp = p.temporary(nhg, "grad of r's pre-activation");
        p.free(gr);
        const int gzp = p.temporary(nhg, "grad of z's pre-activation");
        p.free(gz);
        p.release(s.gates);
        const int gh3 = p.temporary(nh3, "grad of h's gates");
        p.free(ghn);
        const int mm = t > 0 ? p.temporary(nhg, "grad of h_(t-1) through weight_hh") : -1;
        const int w_new = p.temporary(w_hh, "grad of weight_hh at a step");
        const int b_new = bias ? p.temporary(b, "grad of bias_hh at a step") : -1;
        p.free(gh3);
        if (c.low && t == 1 && c.w_hh[at] >= 0) p.release(c.w_hh[at]);  // step 0 keeps no weight_hh
        if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].h);
        else if (c.low) p.release(c.h0[at]);
        else if (l == 0 && last_dir && kept.zeros_h >= 0) p.release(kept.zeros_h);
        // The steps' weight_hh and bias_hh gradients are summed as they come: out of place, but
        // in 2.x in place into a sum already made (from the third step on).
        const bool summed_before = in_place && t + 2 < d.t;
        const bool new_b_sum = b_sum >= 0 && !summed_before;
        const int b_next = new_b_sum ? p.temporary(b, "grad of bias_hh, summed") : b_sum >= 0 ? b_sum : b_new;
        if (b_sum >= 0) p.free(b_new);
        h_grad = -1;
        if (mm >= 0 && !c.low && !in_place) {
          h_grad = p.temporary(nh, "grad of h_(t-1)");
          p.free(h_sum);
        } else if (mm >= 0 && !c.low) {  // added into the output's part in place
          h_grad = h_sum;
        }
        if (new_b_sum) p.free(b_sum);
        b_sum = b_next;
        if (mm >= 0 && !c.low) p.free(mm);
        if (w_sum >= 0 && !summed_before) {
          const int sum = p.temporary(w_hh, "grad of weight_hh, summed");
          p.free(w_sum);
          p.free(w_new);
          w_sum = sum;
        } else if (w_sum >= 0) {
          p.free(w_new);
        } else {
          w_sum = w_new;
        }
        if (mm >= 0 && c.low) {  // ToCopyBackward0 of h_(t-1)'s copy, added to the output's part (in place in 2.x)
          const int back = p.temporary(nh, "grad of h_(t-1) through weight_hh, cast");
          p.free(mm);
          if (in_place) {
            h_grad = h_sum;
          } else {
            h_grad = p.temporary(nh, "grad of h_(t-1)");
            p.free(h_sum);
          }
          p.free(back);
        }
        if (c.low && t == 0) hand_over_hidden(p, w_sum, b_sum, fp, bias, true);
        step_gates.push_back(p.temporary(nh3, "grad of a step's input gates"));
        p.free(grp);
        p.free(gzp);
        p.free(gnp);
      }
      if (!c.low) hand_over_hidden(p, w_sum, b_sum, fp, bias, false);
      const int stacked = p.temporary({{d.t, d.n, checked_mul(3, d.hidden)}, g}, "grad of the stacked input gates");
      for (int gs : step_gates) p.free(gs);
      const bool bias_first = l == 0 && batch_first;  // AddBackward0, then MmBackward0
      const TensorType grad_in{{d.t, d.n, layer_in}, dtype};
      if (c.low) {
        // Each direction's gradient of its copy, cast back, goes at once to the layer input's
        // gradient: the first direction's, the second's added (in place in 2.x).
        const auto take = [&](int grad) {
          if (l == 0) {
            p.free(grad);
            p.input_grad(0);
          } else if (grads_in.empty()) {
            grads_in.push_back(grad);
          } else if (in_place) {
            p.free(grad);
          } else {
            const int sum = p.temporary(grad_in, "grad of layer " + std::to_string(l) + "'s input, summed");
            p.free(grads_in.front());
            p.free(grad);
            grads_in.front() = sum;
          }
        };
        low_addmm(p, *c.low,
                  {grad_in, checked_mul(3, d.hidden), c.input[at], c.w_ih[at], fp, l > 0 || (input_grad && dir == 0), bias, bias_first},
                  stacked, take);
        continue;
      }
      if (l > 0)
        grads_in.push_back(p.temporary(grad_in, "grad of layer " + std::to_string(l) + "'s input"));
      else if (input_grad && dir == 0)
        p.input_grad(0);
      if (bias && bias_first) p.param_grad(fp + 2);
      p.param_grad(fp);
      if (bias && !bias_first) p.param_grad(fp + 2);
      p.free(stacked);
      // The layer's input: with batch_first, layer 0's time-major copy (one per direction).
      const std::int64_t copies = batch_first ? d.dirs : 1;
      if (l == 0 && batch_first) p.release(kept.layer_input[static_cast<std::size_t>(dir)]);
      else if (last_dir) p.release(kept.layer_input[static_cast<std::size_t>(l == 0 ? 0 : copies + l - 1)]);
      p.params_done();
    }
    if (l == 0) break;
    int grad = grads_in.front();
    if (grads_in.size() > 1) {
      const int sum = p.temporary({{d.t, d.n, layer_in}, dtype}, "grad of layer " + std::to_string(l) + "'s input, summed");
      for (int gi : grads_in) p.free(gi);
      grad = sum;
    }
    if (!masks.empty()) {  // dropout on layer l - 1's output
      const int dropped = p.temporary({{d.t, d.n, layer_in}, dtype}, "grad through dropout");
      p.free(grad);
      p.release(masks[static_cast<std::size_t>(l - 1)]);
      grad = dropped;
    }
    incoming = grad;
  }
  return events;
}

}  // namespace nnmem::layers
