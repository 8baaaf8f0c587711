// The recurrent layers' backward programs, node by node as PyTorch's engine runs them.
#include "recurrent_backward.hpp"

#include <utility>

namespace nnmem::layers {
namespace {

// The steps' summed weight_hh gradient becomes weight_hh's .grad, then the summed bias_hh's
// bias_hh's (parameters first_param + 1 and + 3: weight_ih, weight_hh, bias_ih, bias_hh);
// the generic LSTM's and GRU's backward end their hidden-to-hidden sums alike.
void hand_over_hidden(Program& p, int w_sum, int b_sum, int first_param, bool bias) {
  p.free(w_sum);
  p.param_grad(first_param + 1);
  if (bias) {
    p.free(b_sum);
    p.param_grad(first_param + 3);
  }
  p.params_done();
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
std::vector<BackwardEvent> lstm_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, const LstmSteps& kept,
                                               const std::vector<int>& first_param) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const TensorType nh{{d.n, d.hidden}, dtype};
  const TensorType w_hh{{checked_mul(4, d.hidden), d.hidden}, dtype};
  const TensorType b{{checked_mul(4, d.hidden)}, dtype};
  int incoming = -1;  // the layer output's gradient; -1: the module output's
  const auto release_incoming = [&] { incoming < 0 ? p.release_grad_out(0) : p.free(incoming); };
  for (std::int64_t l = d.layers; l-- > 0;) {
    const std::vector<LstmStep>& steps = kept.steps[static_cast<std::size_t>(l)];
    const int fp = first_param[static_cast<std::size_t>(l)];
    int h_grad = -1, c_carry = -1, w_sum = -1, b_sum = -1;
    std::vector<int> step_gates;
    for (std::int64_t t = d.t; t-- > 0;) {
      const LstmStep& s = steps[static_cast<std::size_t>(t)];
      std::vector<int> g = {p.temporary(nh, "grad of o")};
      const int gtc = p.temporary(nh, "grad of tanh(c_t)");
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
      g.push_back(p.temporary(nh, "grad of f"));
      c_carry = t > 0 ? p.temporary(nh, "grad of c_(t-1)") : -1;
      g.push_back(p.temporary(nh, "grad of i"));
      g.push_back(p.temporary(nh, "grad of g"));
      p.free(gc);
      if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].c);
      else if (l == 0 && kept.zeros_c >= 0) p.release(kept.zeros_c);
      for (int& gate : g) {
        const int pre = p.temporary(nh, "grad of a gate's pre-activation");
        p.free(std::exchange(gate, pre));
      }
      p.release(s.gates);
      step_gates.push_back(p.temporary({{d.n, checked_mul(4, d.hidden)}, dtype}, "grad of a step's gates"));
      for (int gate : g) p.free(gate);
      const int mm = t > 0 ? p.temporary(nh, "grad of h_(t-1) through weight_hh") : -1;
      const int w_new = p.temporary(w_hh, "grad of weight_hh at a step");
      const int b_new = bias ? p.temporary(b, "grad of bias_hh at a step") : -1;
      if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].h);
      else if (l == 0 && kept.zeros_h >= 0) p.release(kept.zeros_h);
      const int b_next = b_sum >= 0 ? p.temporary(b, "grad of bias_hh, summed") : b_new;
      if (b_sum >= 0) p.free(b_new);
      if (mm >= 0) {
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
    }
    hand_over_hidden(p, w_sum, b_sum, fp, bias);
    const int stacked = p.temporary({{d.t, d.n, checked_mul(4, d.hidden)}, dtype}, "grad of the stacked gates");
    for (int g : step_gates) p.free(g);
    int grad_in = -1;
    if (l > 0)
      grad_in = p.temporary({{d.t, d.n, checked_mul(d.dirs, d.hidden)}, dtype}, "grad of layer " + std::to_string(l) + "'s input");
    else if (input_grad)
      p.input_grad(0);
    const bool bias_first = l == 0 && batch_first;  // AddBackward0, then MmBackward0
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
std::vector<BackwardEvent> gru_steps_backward(const Dims& d, DType dtype, bool batch_first, bool bias, bool input_grad, bool in_place,
                                              const GruSteps& kept, const std::vector<int>& first_param, const std::vector<int>& masks) {
  std::vector<BackwardEvent> events;
  Program p(events);
  const TensorType nh{{d.n, d.hidden}, dtype}, nh3{{d.n, checked_mul(3, d.hidden)}, dtype};
  const TensorType w_hh{{checked_mul(3, d.hidden), d.hidden}, dtype};
  const TensorType b{{checked_mul(3, d.hidden)}, dtype};
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
        const int gdiff = p.temporary(nh, "grad of h - n");
        const int gz = p.temporary(nh, "grad of z");
        p.release(s.diff);
        const int gneg = p.temporary(nh, "grad of -n");
        int h_sum = -1;
        if (t > 0) {
          h_sum = p.temporary(nh, "grad of h_(t-1), the output's part");
          if (last_dir && t == 1) incoming < 0 ? p.release_grad_out(0) : p.free(incoming);
        } else {
          p.free(gdiff);
        }
        if (d.t == 1 && last_dir) incoming < 0 ? p.release_grad_out(0) : p.free(incoming);
        // n's gradient: h''s plus -n's, into h''s in place in 2.x unless h''s is a view (the
        // output's slice at the last step).
        int gn = h_grad;
        if (in_place && h_grad >= 0) {
          p.free(gneg);
        } else {
          gn = p.temporary(nh, "grad of n");
          p.free(gneg);
        }
        if (t > 0) p.free(gdiff);
        if (h_grad >= 0 && gn != h_grad) p.free(h_grad);
        const int gnp = p.temporary(nh, "grad of n's pre-activation");
        p.free(gn);
        p.release(s.tanh);
        const int ghn = p.temporary(nh, "grad of h_n");
        const int gr = p.temporary(nh, "grad of r");
        p.release(s.hn);
        const int grp = p.temporary(nh, "grad of r's pre-activation");
        p.free(gr);
        const int gzp = p.temporary(nh, "grad of z's pre-activation");
        p.free(gz);
        p.release(s.gates);
        const int gh3 = p.temporary(nh3, "grad of h's gates");
        p.free(ghn);
        const int mm = t > 0 ? p.temporary(nh, "grad of h_(t-1) through weight_hh") : -1;
        const int w_new = p.temporary(w_hh, "grad of weight_hh at a step");
        const int b_new = bias ? p.temporary(b, "grad of bias_hh at a step") : -1;
        p.free(gh3);
        if (t > 0) p.release(steps[static_cast<std::size_t>(t - 1)].h);
        else if (l == 0 && last_dir && kept.zeros_h >= 0) p.release(kept.zeros_h);
        // The steps' weight_hh and bias_hh gradients are summed as they come: out of place, but
        // in 2.x in place into a sum already made (from the third step on).
        const bool summed_before = in_place && t + 2 < d.t;
        const bool new_b_sum = b_sum >= 0 && !summed_before;
        const int b_next = new_b_sum ? p.temporary(b, "grad of bias_hh, summed") : b_sum >= 0 ? b_sum : b_new;
        if (b_sum >= 0) p.free(b_new);
        h_grad = -1;
        if (mm >= 0 && !in_place) {
          h_grad = p.temporary(nh, "grad of h_(t-1)");
          p.free(h_sum);
        } else if (mm >= 0) {  // added into the output's part in place
          h_grad = h_sum;
        }
        if (new_b_sum) p.free(b_sum);
        b_sum = b_next;
        if (mm >= 0) p.free(mm);
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
        step_gates.push_back(p.temporary(nh3, "grad of a step's input gates"));
        p.free(grp);
        p.free(gzp);
        p.free(gnp);
      }
      hand_over_hidden(p, w_sum, b_sum, fp, bias);
      const int stacked = p.temporary({{d.t, d.n, checked_mul(3, d.hidden)}, dtype}, "grad of the stacked input gates");
      for (int g : step_gates) p.free(g);
      if (l > 0)
        grads_in.push_back(p.temporary({{d.t, d.n, layer_in}, dtype}, "grad of layer " + std::to_string(l) + "'s input"));
      else if (input_grad && dir == 0)
        p.input_grad(0);
      const bool bias_first = l == 0 && batch_first;  // AddBackward0, then MmBackward0
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
      for (int g : grads_in) p.free(g);
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
