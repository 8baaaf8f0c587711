// Pipeline parallelism (docs/parallel.md, "Pipeline parallelism"): the spec's top-level entries
// split into stages, each stage's rank a spec of its own whose inputs are the activations that
// cross into it, its step simulated, and its peak raised by the micro-batches its schedule keeps
// in flight. With tensor parallelism, each stage is one tensor-parallel rank's. Modelled.
#include <algorithm>
#include <map>
#include <set>

#include "../enum_names.hpp"
#include "collectives.hpp"
#include "nnmem/checked.hpp"
#include "nnmem/diagnostic.hpp"
#include "nnmem/parallel.hpp"

namespace nnmem {
namespace {

constexpr EnumNames<PipelineSchedule, 3> kSchedules{{{
    {PipelineSchedule::GPipe, "gpipe"}, {PipelineSchedule::OneFOneB, "1f1b"}, {PipelineSchedule::Interleaved, "interleaved"},
}}};

// The spec's top-level entries in order, each with its nodes, and which are the pipeline's
// layers: the block instances, or without blocks the entries with parameters.
struct Unit {
  std::string name;
  std::vector<std::size_t> nodes;
  bool layer = false;
};

std::vector<Unit> units_of(const Graph& g) {
  std::vector<Unit> units;
  bool blocks = false;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const LayerSpec& l = g.layer(g.nodes[i]);
    if (units.empty() || units.back().name != l.unit) units.push_back({l.unit, {}, false});
    units.back().nodes.push_back(i);
    units.back().layer = units.back().layer || (l.unit_is_block ? true : !g.nodes[i].result->params.empty());
    blocks = blocks || l.unit_is_block;
  }
  if (blocks)
    for (Unit& u : units) u.layer = g.layer(g.nodes[u.nodes.front()]).unit_is_block;
  return units;
}

// Pipeline layers per chunk (pp × virtual stages of them): as given, or balanced with the
// remainder on the last chunks.
std::vector<std::int64_t> chunk_sizes(const Graph& g, std::int64_t layers, const ModelParallelOptions& mp) {
  const std::int64_t chunks = checked_mul(mp.pp, mp.virtual_stages);
  const std::string what = mp.virtual_stages > 1 ? std::to_string(chunks) + " model chunks (--pp " + std::to_string(mp.pp) +
                                                       " × --virtual-stages " + std::to_string(mp.virtual_stages) + ")"
                                                 : std::to_string(chunks) + " pipeline stages (--pp " + std::to_string(mp.pp) + ")";
  const std::string counted = "'" + g.spec.name + "' has " + std::to_string(layers) + " pipeline layers (" +
                              (layers > 0 ? "its block instances, or its top-level layers with parameters" : "none") + ")";
  if (!mp.stages.empty()) {
    if (static_cast<std::int64_t>(mp.stages.size()) != chunks)
      throw Error(g.spec.loc, "--stages gives " + std::to_string(mp.stages.size()) + " sizes; expected one for each of the " + what);
    std::int64_t sum = 0;
    for (std::int64_t s : mp.stages) {
      if (s < 1) throw Error(g.spec.loc, "--stages: every stage needs at least one layer, found " + std::to_string(s));
      sum = checked_add(sum, s);
    }
    if (sum != layers) throw Error(g.spec.loc, "--stages adds up to " + std::to_string(sum) + " layers; " + counted);
    return mp.stages;
  }
  if (layers < chunks) throw Error(g.spec.loc, counted + ": too few to fill " + what);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(chunks), layers / chunks);
  for (std::int64_t k = 0; k < layers % chunks; ++k) ++sizes[static_cast<std::size_t>(chunks - 1 - k)];
  return sizes;
}

// Per unit, its chunk: entries before the first layer go with the first, others with the layer before them.
std::vector<std::int64_t> chunk_of_units(const std::vector<Unit>& units, const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> chunk(units.size(), 0);
  std::int64_t c = 0, filled = 0;
  bool seen = false;
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (units[u].layer) {
      if (seen && filled == sizes[static_cast<std::size_t>(c)]) ++c, filled = 0;
      ++filled;
      seen = true;
    }
    chunk[u] = c;
  }
  return chunk;
}

// The spec of the rank that runs `mine` (per node): its layers, the parameter-free constants they
// read from elsewhere made again, and every other value crossing in as an input.
ModelSpec stage_spec(const Graph& g, const std::vector<bool>& mine, bool last, std::int64_t index) {
  std::vector<bool> constant(g.values.size(), false);
  for (const Node& n : g.nodes) {
    const bool c = n.result->params.empty() && std::all_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return constant[static_cast<std::size_t>(v)]; });
    for (int v : n.outputs) constant[static_cast<std::size_t>(v)] = c;
  }
  std::vector<bool> keep = mine;
  for (std::size_t i = g.nodes.size(); i-- > 0;)
    if (keep[i])
      for (int v : g.nodes[i].inputs) {
        const int p = g.values[static_cast<std::size_t>(v)].producer;
        if (p >= 0 && constant[static_cast<std::size_t>(v)]) keep[static_cast<std::size_t>(p)] = true;
      }
  ModelSpec s = g.spec;
  s.name = g.spec.name + " chunk " + std::to_string(index);
  s.layers.clear();
  s.inputs.clear();
  s.outputs.clear();
  s.output_locs.clear();
  if (!last) s.losses.clear();
  std::set<std::string> names, read_in;
  std::map<std::size_t, std::size_t> index_of;  // g.spec.layers -> s.layers
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) {
      names.insert(g.layer(g.nodes[i]).name);
      index_of.emplace(static_cast<std::size_t>(g.nodes[i].layer), index_of.size());
    }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    const Node& n = g.nodes[i];
    LayerSpec l = g.layer(n);
    if (!l.links().shares.empty() && !names.count(l.links().shares))
      throw Error(l.links().shares_loc, "--pp: '" + l.name + "' calls the module of '" + l.links().shares + "' again, which runs on another "
                                "pipeline stage; a shared module must stay on one stage");
    // A weight tied to another stage's layer is a copy of its own there (Megatron's word embeddings on the last stage).
    if (!l.links().ties.empty()) std::erase_if(l.edit_links().ties, [&](const ParamTie& t) { return !names.count(t.layer); });
    for (int v : n.inputs) {
      const TensorValue& val = g.values[static_cast<std::size_t>(v)];
      if ((val.producer >= 0 && keep[static_cast<std::size_t>(val.producer)]) || !read_in.insert(val.name).second) continue;
      const auto given = std::find_if(g.spec.inputs.begin(), g.spec.inputs.end(), [&](const InputSpec& in) { return in.name == val.name; });
      if (given != g.spec.inputs.end()) {
        s.inputs.push_back(*given);
        continue;
      }
      if (val.type.shape.empty() || val.type.shape.front() != g.options.batch)
        throw Error(l.loc, "--pp: '" + val.name + "' " + to_string(val.type.shape) + " crosses into pipeline stage " +
                               std::to_string(index) + " without the batch as its first dimension; put the boundary elsewhere with --stages");
      s.inputs.push_back({val.name, Shape(val.type.shape.begin() + 1, val.type.shape.end()), val.type.dtype, true, l.loc});
    }
    s.layers.push_back(std::move(l));
  }
  // Python's references into this stage: held until their layer, or to the stage's end when
  // that layer runs on a later stage (the stage's forward returns its tensors then).
  std::set<std::string> here = read_in;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i])
      for (int v : g.nodes[i].outputs) here.insert(g.values[static_cast<std::size_t>(v)].name);
  s.references.clear();
  for (const Reference& r : g.spec.references) {
    if (!here.count(r.value) || index_of.empty() || r.until < index_of.begin()->first) continue;
    const auto until = index_of.lower_bound(r.until);
    s.references.push_back({r.value, until != index_of.end() && until->first == r.until ? until->second : s.layers.size() - 1});
  }
  // A classed block whose layers all run on this stage, renumbered.
  s.classed_blocks.clear();
  for (const ClassedBlock& b : g.spec.classed_blocks) {
    const auto first = index_of.find(b.first), last = index_of.find(b.end - 1);
    if (first != index_of.end() && last != index_of.end() && last->second - first->second == b.end - 1 - b.first)
      s.classed_blocks.push_back({b.cls, b.instance, first->second, last->second + 1, b.output, b.loc});
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (!mine[i]) continue;
    for (int v : g.nodes[i].outputs) {
      const TensorValue& val = g.values[static_cast<std::size_t>(v)];
      const bool out = std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
      const bool sent = !constant[static_cast<std::size_t>(v)] &&  // a constant is made again where it is read
                        std::any_of(val.readers.begin(), val.readers.end(), [&](int r) { return !keep[static_cast<std::size_t>(r)]; });
      if ((out && last) || sent) {
        s.outputs.push_back(val.name);
        s.output_locs.push_back(g.layer(g.nodes[i]).loc);
      }
    }
  }
  if (!last && s.outputs.size() > 1)
    throw Error(s.output_locs[1], "--pp: pipeline stage " + std::to_string(index) + " would send " + std::to_string(s.outputs.size()) +
                                      " tensors on ('" + s.outputs[0] + "', '" + s.outputs[1] + "', …); a stage sends one, so the "
                                      "boundary cannot fall inside a skip connection: move it with --stages");
  add_global_memory_buffer(s, g);  // the stage's rank gathers into a buffer of its own
  return s;
}

// What one micro-batch's forward leaves behind for its backward: its input and the activations
// its forward (and loss) allocated and had not freed when the forward ends.
std::int64_t held_bytes(const Estimate& e) {
  std::set<int> mine;
  std::int64_t held = 0;
  for (const TimelineEvent& ev : e.timeline) {
    if (e.timeline.micro_step(ev) != 1 || ev.phase != Phase::Forward) continue;
    const bool batch = ev.kind == MemoryKind::Inputs, made = ev.kind == MemoryKind::Activations && !e.timeline.layer(ev).empty();
    if (ev.delta > 0 && (batch || made)) mine.insert(ev.block);
    if (mine.count(ev.block)) held = checked_add(held, ev.delta);
  }
  return held;
}

// Micro-batches (interleaved: chunk forwards) in flight at stage `i` (Megatron's schedules).
std::int64_t chunks_in_flight(const ModelParallelOptions& mp, std::int64_t i, std::int64_t micro_batches) {
  switch (mp.schedule) {
    case PipelineSchedule::GPipe: return micro_batches;
    case PipelineSchedule::OneFOneB: return std::min(mp.pp - i, micro_batches);
    case PipelineSchedule::Interleaved: {
      // get_num_warmup_microbatches: (pp − i − 1)·2 + (V − 1)·pp warm-up forwards, then one more.
      const std::int64_t warmup = checked_add(checked_mul(mp.pp - i - 1, 2), checked_mul(mp.virtual_stages - 1, mp.pp));
      return std::min(warmup + 1, checked_mul(micro_batches, mp.virtual_stages));
    }
  }
  return 1;
}

// PipelineStage::totals: the simulated chunk's, the other chunks' states added (what they keep
// across steps, by kind; the rest of it their gradients), the in-flight activations as activations.
Totals rank_totals(const PipelineStage& st, const Totals& chunks, std::int64_t in_flight_extra) {
  Totals t = st.estimate.totals;
  const auto at = [&](MemoryKind k) -> std::int64_t& { return t.peak_breakdown[static_cast<std::size_t>(k)]; };
  at(MemoryKind::Parameters) = checked_add(at(MemoryKind::Parameters), chunks.param_bytes - t.param_bytes);
  at(MemoryKind::Buffers) = checked_add(at(MemoryKind::Buffers), chunks.buffer_bytes - t.buffer_bytes);
  at(MemoryKind::OptimizerState) = checked_add(at(MemoryKind::OptimizerState), chunks.optimizer_state_bytes - t.optimizer_state_bytes);
  const std::int64_t others = st.persistent_bytes - t.persistent_bytes;
  const std::int64_t states = chunks.param_bytes - t.param_bytes + chunks.buffer_bytes - t.buffer_bytes + chunks.optimizer_state_bytes -
                              t.optimizer_state_bytes;
  at(MemoryKind::Gradients) = checked_add(at(MemoryKind::Gradients), others - states);
  at(MemoryKind::Activations) = checked_add(at(MemoryKind::Activations), in_flight_extra);
  t.params = chunks.params;
  t.param_bytes = chunks.param_bytes;
  t.buffer_bytes = chunks.buffer_bytes;
  t.grad_bytes = chunks.grad_bytes;
  t.optimizer_state_bytes = chunks.optimizer_state_bytes;
  t.persistent_bytes = st.persistent_bytes;
  t.saved_bytes = checked_add(t.saved_bytes, in_flight_extra);
  t.peak_bytes = st.peak_bytes;
  return t;
}

}  // namespace

std::string_view name_of(PipelineSchedule schedule) { return kSchedules.name(schedule); }
std::optional<PipelineSchedule> parse_schedule(std::string_view name) { return kSchedules.parse(name); }

std::size_t ModelParallelEstimate::most_loaded() const {
  std::size_t best = 0;
  for (std::size_t k = 1; k < stages.size(); ++k)
    if (stages[k].peak_bytes > stages[best].peak_bytes) best = k;
  return best;
}

ModelParallelEstimate estimate_model_parallel(const ModelSpec& spec, const EstimateOptions& options, const ModelParallelOptions& mp) {
  if (mp.pp < 1 || mp.virtual_stages < 1) throw Error(spec.loc, "--pp and --virtual-stages: expected at least 1");
  if ((mp.schedule == PipelineSchedule::Interleaved) != (mp.virtual_stages > 1))
    throw Error(spec.loc, mp.virtual_stages > 1 ? "--virtual-stages " + std::to_string(mp.virtual_stages) + " needs --schedule interleaved, found --schedule " +
                                                       std::string(name_of(mp.schedule))
                                                 : std::string("--schedule interleaved needs --virtual-stages of 2 or more, found 1"));
  ModelParallelEstimate out;
  out.options = mp;
  out.micro_batches = options.step.grad_accum;
  const Graph full = build_graph(spec, options.graph);
  TensorParallelSpec rank = tensor_parallel_rank(full, mp.tp, mp.sequence_parallel);
  out.split = std::move(rank.split);
  const Graph g = mp.tp > 1 ? build_graph(std::move(rank.spec), options.graph) : full;
  const std::vector<Unit> units = units_of(g);
  const auto layers = std::count_if(units.begin(), units.end(), [](const Unit& u) { return u.layer; });
  const std::vector<std::int64_t> chunk = chunk_of_units(units, chunk_sizes(g, layers, mp));
  for (std::int64_t i = 0; i < mp.pp; ++i) {
    PipelineStage st;
    st.index = i;
    // Each of its chunks (one without interleaving) a step of its own; the rank holds all their
    // parameters and states at once, and one chunk's transients at a time.
    std::int64_t transient = -1;
    Totals chunks;  // every chunk's states, summed
    for (std::int64_t c = i; c < checked_mul(mp.pp, mp.virtual_stages); c += mp.pp) {
      std::vector<bool> mine(g.nodes.size(), false);
      for (std::size_t u = 0; u < units.size(); ++u) {
        if (chunk[u] != c) continue;
        st.units.push_back(units[u].name);
        st.layers += units[u].layer ? 1 : 0;
        for (std::size_t n : units[u].nodes) mine[n] = true;
      }
      const bool last = c + 1 == checked_mul(mp.pp, mp.virtual_stages);
      EstimateOptions o = options;
      if (!last) o.step.loss = LossKind::Mean;  // the gradient sent back stands for the loss's
      o.step.timeline = true;  // held_bytes() reads it
      Estimate e = estimate(stage_spec(g, mine, last, c), o);
      const Totals& t = e.totals;
      st.params = checked_add(st.params, t.params);
      st.state_bytes = checked_add(st.state_bytes, checked_add(checked_add(t.param_bytes, t.grad_bytes), t.optimizer_state_bytes));
      st.persistent_bytes = checked_add(st.persistent_bytes, t.persistent_bytes);
      st.held_bytes = checked_add(st.held_bytes, held_bytes(e));
      for (auto field : {&Totals::params, &Totals::param_bytes, &Totals::buffer_bytes, &Totals::grad_bytes, &Totals::optimizer_state_bytes})
        chunks.*field = checked_add(chunks.*field, t.*field);
      if (t.peak_bytes - t.persistent_bytes > transient) {
        transient = t.peak_bytes - t.persistent_bytes;
        st.estimate = std::move(e);
      }
    }
    st.in_flight_chunks = chunks_in_flight(mp, i, out.micro_batches);
    st.in_flight = (st.in_flight_chunks + mp.virtual_stages - 1) / mp.virtual_stages;
    // Held once in a simulated step; the other chunk forwards in flight hold 1/V of it each.
    const std::int64_t extra = checked_mul(st.held_bytes, st.in_flight_chunks - std::min(st.in_flight_chunks, mp.virtual_stages)) / mp.virtual_stages;
    st.peak_bytes = checked_add(checked_add(st.persistent_bytes, transient), extra);
    st.totals = rank_totals(st, chunks, extra);
    out.data_parallel = st.estimate.options.step.parallel.world_size;
    out.stages.push_back(std::move(st));
  }
  return out;
}

}  // namespace nnmem
