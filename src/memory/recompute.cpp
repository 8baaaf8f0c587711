// Which nodes form checkpointed segments, and what each reads, returns and keeps.
#include "recompute.hpp"

#include <algorithm>
#include <utility>

namespace nnmem::detail {

namespace {

const TensorValue& value(const Graph& g, int v) { return g.values[static_cast<std::size_t>(v)]; }

bool in_autograd(const Graph& g, const Node& n) {
  return std::any_of(n.outputs.begin(), n.outputs.end(), [&](int v) { return value(g, v).requires_grad; });
}

// Consecutive nodes grouped as the options say: (name, where asked, first, last).
struct Group {
  std::string name;
  SourceLoc loc;
  std::size_t first, last;
  bool asked;  // the spec asked for it (`checkpoint: true`): an error if pointless
};

// Megatron's selective recomputation: the attention cores, each a segment. A
// ScaledDotProductAttention is one; attention written out is the MatMul of the scores (through
// scaling or masking, one input each), the Softmax, and through its Dropout or transposes to
// the MatMul that weights the values. Located error when the spec has none.
std::vector<Group> attention_cores(const Graph& g) {
  std::vector<Group> out;
  const auto type = [&](int node) -> const std::string& { return g.layer(g.nodes[static_cast<std::size_t>(node)]).type; };
  constexpr int kReach = 4;  // nodes between the MatMuls and the Softmax, at most
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const LayerSpec& l = g.layer(g.nodes[i]);
    if (l.type == "ScaledDotProductAttention") {
      out.push_back({l.name, l.loc, i, i, false});
      continue;
    }
    if (l.type != "Softmax") continue;
    int first = static_cast<int>(i), last = first;
    for (int k = 0; k < kReach && type(first) != "MatMul"; ++k) {
      const int producer = value(g, g.nodes[static_cast<std::size_t>(first)].inputs.front()).producer;
      if (producer < 0) break;
      first = producer;
    }
    for (int k = 0; k < kReach && type(last) != "MatMul"; ++k) {
      const auto& readers = value(g, g.nodes[static_cast<std::size_t>(last)].outputs.front()).readers;
      if (readers.size() != 1) break;
      last = readers.front();
    }
    if (type(first) == "MatMul" && type(last) == "MatMul" && first < static_cast<int>(i))
      out.push_back({l.name, g.layer(g.nodes[static_cast<std::size_t>(first)]).loc, static_cast<std::size_t>(first),
                     static_cast<std::size_t>(last), false});
  }
  if (out.empty())
    throw Error(g.spec.loc, "--checkpoint selective recomputes the attention cores, and '" + g.spec.name +
                                "' has none: expected a ScaledDotProductAttention layer, or a Softmax between two MatMul "
                                "layers; found neither (use --checkpoint blocks or every:K)");
  return out;
}

std::vector<Group> groups(const Graph& g, const RecomputeOptions& o) {
  std::vector<Group> out;
  const auto layer = [&](std::size_t i) -> const LayerSpec& { return g.layer(g.nodes[i]); };
  if (o.segments == CheckpointSegments::Selective) return attention_cores(g);
  if (o.segments == CheckpointSegments::Spec) {
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const LayerSpec& l = layer(i);
      const LayerLinks& links = l.links();
      if (links.checkpoint.empty()) continue;
      if (!out.empty() && out.back().last + 1 == i && out.back().name == links.checkpoint) out.back().last = i;
      else out.push_back({links.checkpoint, links.checkpoint_loc, i, i, true});
    }
    return out;
  }
  // The top-level entries (units), in order.
  std::vector<Group> units;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const LayerSpec& l = layer(i);
    if (!units.empty() && units.back().name == l.unit) units.back().last = i;
    else units.push_back({l.unit, l.loc, i, i, false});
  }
  if (o.segments == CheckpointSegments::Blocks) {
    for (const Group& u : units)
      if (layer(u.first).unit_is_block) out.push_back(u);
  } else if (o.segments == CheckpointSegments::Every) {
    const auto k = static_cast<std::size_t>(o.every);
    for (std::size_t u = 0; u < units.size(); u += k) {
      const std::size_t end = std::min(units.size(), u + k) - 1;
      const std::string name = end == u ? units[u].name : units[u].name + ".." + units[end].name;
      out.push_back({name, units[u].loc, units[u].first, units[end].last, false});
    }
  }
  return out;
}

std::string describe(const Group& gr) { return "checkpointed '" + gr.name + "'"; }

}  // namespace

int CheckpointPlan::reads_inside(const Graph& graph, const Segment& s, int v) {
  const auto& readers = value(graph, v).readers;
  return static_cast<int>(std::count_if(readers.begin(), readers.end(), [&](int r) {
    return static_cast<std::size_t>(r) >= s.first && static_cast<std::size_t>(r) <= s.last;
  }));
}

CheckpointPlan plan_checkpoints(const Graph& graph, const RecomputeOptions& options) {
  CheckpointPlan plan;
  plan.impl = options.impl;
  plan.segment_of.assign(graph.nodes.size(), -1);
  if (graph.options.mode != Mode::Train || options.segments == CheckpointSegments::None) return plan;
  const bool reentrant = options.impl == CheckpointImpl::Reentrant;
  for (const Group& gr : groups(graph, options)) {
    Segment s{gr.name, gr.loc, gr.first, gr.last, {}, {}, {}};
    bool trainable = false, grad_path = false;
    for (std::size_t i = s.first; i <= s.last; ++i) {
      const Node& node = graph.nodes[i];
      const bool autograd = in_autograd(graph, node);
      grad_path = grad_path || autograd;
      trainable = trainable || (node.trainable && !node.result->params.empty());
      if (autograd && !node.result->saved.empty()) s.keepers.push_back(i);
      for (int v : node.inputs) {
        const int producer = value(graph, v).producer;
        if ((producer < 0 || static_cast<std::size_t>(producer) < s.first) &&
            std::find(s.inputs.begin(), s.inputs.end(), v) == s.inputs.end())
          s.inputs.push_back(v);
      }
      for (int v : node.outputs) {
        const auto& readers = value(graph, v).readers;
        const bool read_later = std::any_of(readers.begin(), readers.end(), [&](int r) { return static_cast<std::size_t>(r) > s.last; });
        if (read_later || std::find(graph.outputs.begin(), graph.outputs.end(), v) != graph.outputs.end()) s.outputs.push_back(v);
      }
    }
    if (!grad_path) {
      if (gr.asked)
        throw Error(s.loc, describe(gr) + ": nothing in it needs a gradient (its inputs need none and its parameters are "
                                          "frozen), so it keeps nothing that checkpointing could recompute");
      continue;  // a frozen entry of --checkpoint blocks|every:K: left as it is
    }
    const bool input_grad = std::any_of(s.inputs.begin(), s.inputs.end(), [&](int v) { return value(graph, v).requires_grad; });
    if (reentrant && trainable && !input_grad)
      throw Error(s.loc, describe(gr) + " with use_reentrant=True (--checkpoint-impl reentrant): none of its inputs needs a "
                                        "gradient, so PyTorch gives the parameters inside it none (torch.utils.checkpoint "
                                        "warns 'None of the inputs have requires_grad=True'); checkpoint from a later layer, "
                                        "or use the non-reentrant implementation");
    for (std::size_t i = s.first; i <= s.last; ++i) {
      const Node& node = graph.nodes[i];
      if (node.result->alias != Alias::InPlace) continue;
      const int target = value(graph, node.inputs.front()).storage;
      for (int v : s.inputs)
        if (value(graph, v).storage == target)
          throw Error(graph.layer(node).loc, graph.layer(node).title() + " overwrites in place '" +
                                                 value(graph, v).name + "', an input of " + describe(gr) +
                                                 ", which the checkpoint keeps to recompute from (PyTorch's backward: one of "
                                                 "the variables needed for gradient computation has been modified by an "
                                                 "inplace operation)");
    }
    for (std::size_t i = s.first; i <= s.last; ++i) plan.segment_of[i] = static_cast<int>(plan.segments.size());
    plan.segments.push_back(std::move(s));
  }
  return plan;
}

}  // namespace nnmem::detail

namespace nnmem::detail {

CheckpointRun::CheckpointRun(const Graph& graph, const CheckpointPlan& plan, MemoryTracker& memory, Simulator simulator)
    : graph_(graph), plan_(plan), memory_(memory), sim_(std::move(simulator)),
      rng_bytes_(graph.options.device == Device::Cpu ? kCpuRngStateBytes : 0),
      reentrant_(plan.impl == CheckpointImpl::Reentrant), frames_(plan.segments.size()) {}

void CheckpointRun::previous_step(bool plain_loop) {
  if (!reentrant_ || !plain_loop) return;
  for (std::size_t k = 0; k < plan_.segments.size(); ++k)
    previous_.push_back(memory_.alloc(MemoryKind::Activations, rng_bytes_, "previous step's checkpoint RNG state"));
}

void CheckpointRun::release_previous() {
  for (int b : previous_) memory_.release(b);
  previous_.clear();
}

void CheckpointRun::release_graph() {
  for (int b : graph_held_) memory_.release(b);
  graph_held_.clear();
}

void CheckpointRun::next_micro_step(bool plain_loop) {
  if (plain_loop) previous_ = std::exchange(graph_held_, {});
  frames_.assign(plan_.segments.size(), Frame{});
}

void CheckpointRun::begin_segment(const Segment& s) {
  memory_.at(Phase::Forward, "checkpoint " + s.name);
  Frame& f = frame(s);
  const int rng = memory_.alloc(MemoryKind::Activations, rng_bytes_, {"RNG state stashed by checkpoint ", s.name});
  (reentrant_ ? graph_held_.emplace_back(rng) : f.rng) = rng;  // a reentrant node's ctx holds it
  for (int v : s.inputs) {
    const int b = sim_.block_of(v);
    memory_.hold(b);
    f.inputs.push_back(b);
  }
}

void CheckpointRun::end_frame(const Segment& s) {
  Frame& f = frame(s);
  if (f.rng >= 0) memory_.release(f.rng);
  f.rng = -1;
  for (int b : f.inputs) memory_.release(b);
  f.inputs.clear();
}

int CheckpointRun::reads(int v) const {
  const bool returned = full_ && std::find(active_->outputs.begin(), active_->outputs.end(), v) != active_->outputs.end();
  return CheckpointPlan::reads_inside(graph_, *active_, v) + (returned ? 1 : 0);
}

void CheckpointRun::held(int block, int reads) {
  if (!active_) return;
  if ((pending_[block] += reads) == 0) pending_.erase(block);
}

// The segment's forward again, from the inputs its frame kept, under fork_rng (which saves the
// surrounding RNG state first) and the autocast state of its forward: both implementations
// recompute inside `with torch.autocast(...)`, whose exit, the outermost one in backward, drops
// the parameter copies it cached (a copy a recomputed node keeps lives on), before fork_rng's
// exit. In full (reentrant, 1.13), every node runs and the function's result is held by its
// caller; 2.x's non-reentrant recomputation raises once the last kept tensor is saved, and unwinds.
void CheckpointRun::recompute(const Segment& s, bool full) {
  const int fork = memory_.alloc(MemoryKind::Activations, rng_bytes_, "RNG state saved by fork_rng");
  std::vector<std::pair<int, int>> outer;  // (value, block): the blocks outside, put back after
  for (std::size_t j = s.first; j <= s.last; ++j)
    for (int v : graph_.nodes[j].outputs)
      if (graph_.storages[static_cast<std::size_t>(graph_.values[static_cast<std::size_t>(v)].storage)].value == v)
        outer.emplace_back(v, std::exchange(sim_.block_of(v), -1));
  active_ = &s;
  full_ = full;
  for (int v : s.inputs) {
    const int n = CheckpointPlan::reads_inside(graph_, s, v);
    memory_.hold(sim_.block_of(v), n);
    held(sim_.block_of(v), n);
  }
  const std::size_t stop = full ? s.last : s.keepers.back();
  for (std::size_t j = s.first; j <= stop; ++j) {
    memory_.at(Phase::Backward, j, graph_.layer(graph_.nodes[j]).name);
    sim_.recompute_node(j, !full && j == stop);
  }
  sim_.autocast_exit();
  memory_.release(fork);
  active_ = nullptr;
  std::vector<int> left;  // what the recomputation still holds: its result, or what it unwinds
  for (const auto& [b, n] : pending_) left.insert(left.end(), static_cast<std::size_t>(n), b);
  pending_.clear();
  if (reentrant_) frame(s).returned = left;
  else
    for (int b : left) memory_.release(b);
  for (const auto& [v, b] : outer) sim_.block_of(v) = b;
}

void CheckpointRun::before_node(std::size_t node, std::map<int, int>& grads) {
  const Segment* s = plan_.of(node);
  if (!s || frame(*s).recomputed) return;
  Frame& f = frame(*s);
  if (reentrant_) {  // CheckpointFunctionBackward: its whole segment, recomputed, then backward
    f.recomputed = true;
    recompute(*s, true);
    for (int v : s->outputs)
      if (const auto g = grads.find(v); g != grads.end()) memory_.hold(g->second), f.args.push_back(g->second);
  } else if (std::find(s->keepers.begin(), s->keepers.end(), node) != s->keepers.end()) {
    f.recomputed = true;  // the first unpack
    recompute(*s, !graph_.options.torch->checkpoint_early_stop);
  }
  memory_.at(Phase::Backward, node, graph_.layer(graph_.nodes[node]).name);
}

bool CheckpointRun::hands_over(std::size_t node) const {
  return !reentrant_ && graph_.options.torch->checkpoint_unpack_hands_over && plan_.of(node);
}

void CheckpointRun::after_node(std::size_t node) {
  const Segment* s = plan_.of(node);
  if (s && !reentrant_ && !s->keepers.empty() && node == s->keepers.front()) end_frame(*s);
}

void CheckpointRun::entering(std::size_t node, std::map<int, int>& grads) {
  for (const Segment& s : plan_.segments)
    if (reentrant_ && frame(s).recomputed && !frame(s).finished && node < s.first) finish(s, grads);
}

void CheckpointRun::backward_done(std::map<int, int>& grads) {
  for (const Segment& s : plan_.segments)
    if (reentrant_ && frame(s).recomputed && !frame(s).finished) finish(s, grads);
}

// CheckpointFunctionBackward returns: AccumulateGrad has given each detached input its gradient
// (stolen, or cloned when something else still holds it), then `outputs`, `args` and the saved
// inputs are let go.
void CheckpointRun::finish(const Segment& s, std::map<int, int>& grads) {
  Frame& f = frame(s);
  f.finished = true;
  for (int v : s.inputs) {
    const auto g = grads.find(v);
    if (g == grads.end() || memory_.refs(g->second) == 1) continue;
    const int clone = memory_.alloc(memory_.kind(g->second), graph_.values[static_cast<std::size_t>(v)].type.bytes(),
                                    "grad of checkpoint input (AccumulateGrad's clone)");
    memory_.release(g->second);
    g->second = clone;
  }
  for (int b : f.returned) memory_.release(b);
  for (int b : f.args) memory_.release(b);
  end_frame(s);
}

}  // namespace nnmem::detail
