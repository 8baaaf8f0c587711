// A backward program (layer.hpp's BackwardEvent), written event by event: shared by the layers
// whose backward PyTorch runs as several autograd nodes (recurrent_backward.cpp,
// multihead_attention_backward.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

namespace nnmem::layers {

class Program {
 public:
  explicit Program(std::vector<BackwardEvent>& events) : events_(events) {}
  int temporary(TensorType type, std::string what) {
    events_.push_back({BackwardEvent::Kind::Temporary, next_, std::move(type), std::move(what)});
    return next_++;
  }
  void free(int slot) { add(BackwardEvent::Kind::Free, slot); }
  void input_grad(int k) { add(BackwardEvent::Kind::InputGrad, k); }
  void input_grads_out() { add(BackwardEvent::Kind::InputGradsOut, 0); }
  void param_grad(int k) { add(BackwardEvent::Kind::ParamGrad, k); }
  void params_done() { add(BackwardEvent::Kind::ParamGradsDone, 0); }
  void release(int saved) { add(BackwardEvent::Kind::ReleaseSaved, saved); }
  void release_grad_out(int k) { add(BackwardEvent::Kind::ReleaseGradOut, k); }

 private:
  void add(BackwardEvent::Kind kind, int index) { events_.push_back({kind, index}); }
  std::vector<BackwardEvent>& events_;
  int next_ = 0;
};

}  // namespace nnmem::layers
