// Steps expanded into ops, and the memory walk over a rank's steps.
#include "views/step_ops.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "core/enum_table.h"

namespace trainsim {

const char* op_phase_name(OpPhase p) {
  static constexpr EnumTable<OpPhase, 5> kPhases("phase", {{{OpPhase::Forward, "forward"},
                                                            {OpPhase::Recompute, "recompute"},
                                                            {OpPhase::Backward, "backward"},
                                                            {OpPhase::BackwardInput, "backward_input"},
                                                            {OpPhase::BackwardWeight, "backward_weight"}}});
  return kPhases.c_str(p);
}

bool is_pass(const TimelineEvent& ev) {
  return ev.chunk >= 0 && (ev.kind == StepKind::Forward || ev.kind == StepKind::Backward ||
                           ev.kind == StepKind::BackwardInput || ev.kind == StepKind::BackwardWeight);
}

namespace {

// Kernel and collective seconds of an op in one phase.
struct Part {
  double compute = 0, comm = 0, flops = 0;
};

Part part_of(const OpCost& o, OpPhase p) {
  switch (p) {
    case OpPhase::Forward: return {o.fwd_s, o.fwd_comm_s, o.fwd_flops};
    case OpPhase::Recompute: return {o.recompute_s, o.recompute_comm_s, o.recompute_flops};
    case OpPhase::Backward: return {o.bwd_s, o.bwd_comm_s, o.bwd_flops};
    case OpPhase::BackwardInput:
      return {o.bwd_s - o.bwd_weight_s, o.bwd_comm_s - o.bwd_weight_comm_s, o.bwd_flops};
    case OpPhase::BackwardWeight: return {o.bwd_weight_s, o.bwd_weight_comm_s, 0};
  }
  return {};
}

}  // namespace

std::vector<OpSlice> expand_step(const Estimate& e, const TimelineEvent& ev) {
  if (!is_pass(ev) || static_cast<size_t>(ev.rank) >= e.ranks.size()) return {};
  const auto& chunks = e.ranks[static_cast<size_t>(ev.rank)].chunks;
  if (static_cast<size_t>(ev.chunk) >= chunks.size()) return {};
  const std::vector<OpCost>& ops = chunks[static_cast<size_t>(ev.chunk)];

  std::vector<std::pair<const OpCost*, OpPhase>> order;
  if (ev.kind == StepKind::Forward) {
    for (const auto& o : ops) order.emplace_back(&o, OpPhase::Forward);
  } else {
    const OpPhase bwd = ev.kind == StepKind::Backward        ? OpPhase::Backward
                        : ev.kind == StepKind::BackwardInput ? OpPhase::BackwardInput
                                                             : OpPhase::BackwardWeight;
    // Blocks of ops sharing a layer (embedding and head are blocks too), walked last to first;
    // Megatron recomputes a checkpointed layer's forward right before its backward.
    size_t hi = ops.size();
    while (hi > 0) {
      size_t lo = hi - 1;
      while (lo > 0 && ops[lo - 1].layer == ops[hi - 1].layer &&
             std::string_view(ops[lo - 1].layer_type) == ops[hi - 1].layer_type)
        --lo;
      if (bwd != OpPhase::BackwardWeight)
        for (size_t i = lo; i < hi; ++i) order.emplace_back(&ops[i], OpPhase::Recompute);
      for (size_t i = hi; i > lo; --i) order.emplace_back(&ops[i - 1], bwd);
      hi = lo;
    }
  }

  double sum = 0;
  for (const auto& [o, p] : order) {
    const Part part = part_of(*o, p);
    sum += part.compute + part.comm;
  }
  std::vector<OpSlice> out;
  if (sum <= 0) return out;
  // The engine's step is the sum of these parts; scaling makes them tile it exactly.
  const double k = (ev.end - ev.start) / sum;
  double t = ev.start;
  for (const auto& [o, p] : order) {
    const Part part = part_of(*o, p);
    if (part.compute + part.comm <= 0) continue;
    OpSlice s{o, p, t, t + part.compute * k, t + (part.compute + part.comm) * k, part.flops};
    t = s.end;
    out.push_back(s);
  }
  out.back().end = ev.end;
  return out;
}

bool expanded_micro_batch(int64_t mb, int64_t micro_batches, int64_t detail) {
  return detail < 0 || mb < detail || mb >= micro_batches - detail;
}

MemoryTrack memory_track(const Estimate& e, int32_t rank, int64_t detail) {
  MemoryTrack track;
  if (static_cast<size_t>(rank) >= e.ranks.size()) return track;
  const RankProfile& prof = e.ranks[static_cast<size_t>(rank)];
  std::vector<const TimelineEvent*> steps;
  bool split = false;
  for (const auto& ev : e.timeline.events) {
    if (ev.rank != rank || !is_pass(ev)) continue;
    steps.push_back(&ev);
    split = split || ev.kind == StepKind::BackwardWeight;
  }
  std::stable_sort(steps.begin(), steps.end(), [](const auto* a, const auto* b) { return a->start < b->start; });

  // Bytes each op saves, scaled so that a chunk's forward saves its per-micro-batch cache.
  std::vector<double> scale(prof.chunks.size(), 0);
  for (size_t c = 0; c < prof.chunks.size(); ++c) {
    double sum = 0;
    for (const auto& o : prof.chunks[c]) sum += o.cache_bytes;
    scale[c] = sum > 0 ? prof.chunk_cache_bytes[c] / sum : 0;
  }
  // (chunk, mb) → saved bytes of the micro-batches in flight; summed afresh at each point, so
  // that rounding cannot accumulate over thousands of passes.
  std::map<std::pair<int32_t, int32_t>, double> live;
  auto record = [&](double time, std::string what, int32_t chunk, int32_t mb) {
    double bytes = prof.model_bytes;
    for (const auto& [k, b] : live) bytes += b;
    track.points.push_back({time, bytes, std::move(what), chunk, mb});
    if (bytes > track.peak_bytes) {
      track.peak_bytes = bytes;
      track.peak_time = time;
      track.live_at_peak.clear();
      for (const auto& [k, b] : live)
        if (b > 0) track.live_at_peak.push_back(k);
    }
  };
  record(0, "model state", -1, -1);
  const StepKind frees = split ? StepKind::BackwardWeight : StepKind::Backward;
  for (const TimelineEvent* ev : steps) {
    const auto c = static_cast<size_t>(ev->chunk);
    const std::pair<int32_t, int32_t> key{ev->chunk, ev->mb};
    const bool saves = ev->kind == StepKind::Forward, releases = ev->kind == frees;
    if (!saves && !releases) continue;
    if (!expanded_micro_batch(ev->mb, e.micro_batches, detail)) {
      if (saves) {
        live[key] += prof.chunk_cache_bytes[c];
      } else {
        live.erase(key);
      }
      record(ev->end, step_kind_name(ev->kind), ev->chunk, ev->mb);
      continue;
    }
    for (const OpSlice& s : expand_step(e, *ev)) {
      if (s.phase == OpPhase::Recompute) continue;
      const double b = s.op->cache_bytes * scale[c];
      live[key] += saves ? b : -std::min(b, live[key]);
      record(s.end, std::string(s.op->name), ev->chunk, ev->mb);
    }
    // Rounding in the shares must not leave bytes behind once the pass has freed them.
    if (releases) live.erase(key);
  }
  return track;
}

}  // namespace trainsim
