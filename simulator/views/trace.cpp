// Chrome trace-event JSON: pipeline stages as processes, streams as threads, ops as complete events.
#include "views/trace.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "model/graph.h"
#include "views/step_ops.h"

namespace trainsim {

namespace {

// Threads of a stage: compute, one per collective group, pipeline p2p, data parallel.
// host: the CPU thread issuing the work (the host model of the default mode).
enum Thread : int { kCompute = 1, kTp, kCp, kEp, kEtp, kPpBlocking, kPpForward, kPpBackward, kDp, kHost, kThreadEnd };
constexpr std::array<const char*, kThreadEnd> kThreadNames = {
    "", "compute", "tp comm", "cp comm", "ep comm", "etp comm", "pp p2p (blocking)", "pp send forward",
    "pp send backward", "dp comm", "host"};

int group_thread(size_t g) {
  switch (static_cast<Group>(g)) {
    case Group::TP: return kTp;
    case Group::CP: return kCp;
    case Group::EP: return kEp;
    case Group::ETP: return kEtp;
    default: return kTp;  // chunk leaves talk over TP, CP, EP and ETP only (kChunkGroups)
  }
}

double us(double s) { return s * 1e6; }

class Writer {
 public:
  explicit Writer(TraceStats& stats) : stats_(stats) {}
  void complete(int pid, int tid, std::string name, double start, double end, nlohmann::ordered_json args) {
    used_[static_cast<size_t>(pid)][static_cast<size_t>(tid)] = true;
    nlohmann::ordered_json ev;
    ev["name"] = std::move(name);
    ev["ph"] = "X";
    ev["pid"] = pid;
    ev["tid"] = tid;
    ev["ts"] = us(start);
    ev["dur"] = us(end - start);
    ev["args"] = std::move(args);
    add(ev);
  }
  void counter(int pid, double t, double bytes) {
    add({{"name", "allocated memory"}, {"ph", "C"}, {"pid", pid}, {"ts", us(t)}, {"args", {{"GiB", bytes / kGiB}}}});
  }
  void resize(size_t pids) { used_.resize(pids + 1); }
  /// The traceEvents array: the names and order of processes and threads, then the events.
  std::string finish(int32_t ranks) {
    std::vector<std::string> meta;
    auto m = [&](const nlohmann::ordered_json& ev) { meta.push_back(ev.dump(-1, ' ', false, kReplace)); };
    for (int32_t r = 0; r < ranks; ++r) {
      const int pid = r + 1;
      m({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "pipeline stage " + std::to_string(r)}}}});
      m({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", r}}}});
      for (int t = kCompute; t < kThreadEnd; ++t) {
        if (!used_[static_cast<size_t>(pid)][static_cast<size_t>(t)]) continue;
        m({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", t},
           {"args", {{"name", kThreadNames[static_cast<size_t>(t)]}}}});
        m({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", t}, {"args", {{"sort_index", t}}}});
      }
    }
    stats_.events = meta.size() + events_.size();
    std::string out = "[\n";
    bool first = true;
    for (const auto* list : {&meta, &events_})
      for (const std::string& ev : *list) {
        if (!first) out += ",\n";
        first = false;
        out += ev;
      }
    return out + "\n]";
  }

 private:
  static constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  // Events are serialized one by one: one JSON array of them all grows too slowly.
  void add(const nlohmann::ordered_json& ev) { events_.push_back(ev.dump(-1, ' ', false, kReplace)); }
  TraceStats& stats_;
  std::vector<std::array<bool, kThreadEnd>> used_;
  std::vector<std::string> events_;
};

// One op slice: its kernels on the compute thread; its exposed collectives after them on their
// groups' threads (in proportion to each group's exposed time); the collectives overlapped with
// its kernels (tp_comm_overlap, shared-expert overlap) beside them, in proportion to the share of
// the op's kernel time this slice holds.
void write_slice(Writer& w, int pid, const TimelineEvent& ev, const OpSlice& s) {
  const OpCost& o = *s.op;
  nlohmann::ordered_json args;
  args["op"] = o.name;
  args["layer_type"] = o.layer_type;
  args["layer"] = o.layer;
  args["chunk"] = ev.chunk;
  args["micro_batch"] = ev.mb;
  args["phase"] = op_phase_name(s.phase);
  const auto comm = [&](size_t g, double start, double end, bool exposed) {
    nlohmann::ordered_json a = args;
    a["group"] = group_name(static_cast<Group>(g));
    a["exposed"] = exposed;
    w.complete(pid, group_thread(g), std::string(o.name) + " " + group_name(static_cast<Group>(g)), start, end, std::move(a));
  };
  if (s.split > s.start) {
    nlohmann::ordered_json a = args;
    a["flops"] = s.flops;
    a["efficiency"] = o.efficiency;
    a["efficiency_source"] = efficiency_label(o.measured, o.source);
    w.complete(pid, kCompute, std::string(o.name), s.start, s.split, std::move(a));
    const double kernels = o.fwd_s + o.bwd_s + o.recompute_s;
    for (size_t g = 0; g < o.hidden_comm_by_group_s.size() && kernels > 0; ++g)
      if (o.hidden_comm_by_group_s[g] > 0)
        comm(g, s.start, std::min(s.split, s.start + o.hidden_comm_by_group_s[g] * (s.split - s.start) / kernels),
             false);
  }
  if (s.end <= s.split) return;
  std::array<double, kGroupCount> exposed{};
  double total = 0;
  for (size_t g = 0; g < exposed.size(); ++g)
    total += exposed[g] = std::max(0.0, o.comm_by_group_s[g] - o.hidden_comm_by_group_s[g]);
  double t = s.split;
  for (size_t g = 0; g < exposed.size() && total > 0; ++g) {
    if (exposed[g] <= 0) continue;
    const double end = t + (s.end - s.split) * exposed[g] / total;
    comm(g, t, end, true);
    t = end;
  }
}

}  // namespace

std::string trace_json(const Estimate& e, const TraceOptions& opt, TraceStats* stats) {
  TraceStats local;
  TraceStats& st = stats ? *stats : local;
  st = {};
  Writer w(st);
  const int32_t ranks = e.timeline.ranks;
  w.resize(static_cast<size_t>(ranks));
  // The step's first forward: the pipeline waits for DP traffic before it (the parameter gather).
  double first_compute = e.pipeline_s;
  for (const TimelineEvent& ev : e.timeline.events)
    if (is_pass(ev)) first_compute = std::min(first_compute, ev.start);
  for (const TimelineEvent& ev : e.timeline.events) {
    const int pid = ev.rank + 1;
    nlohmann::ordered_json args;
    args["kind"] = step_kind_name(ev.kind);
    if (ev.chunk >= 0) args["chunk"] = ev.chunk;
    if (ev.mb >= 0) args["micro_batch"] = ev.mb;
    if (is_pass(ev)) {
      const std::string name = std::string(step_kind_name(ev.kind)) + " mb" + std::to_string(ev.mb) +
                               (e.ranks.empty() || e.ranks[0].chunks.size() > 1 ? " chunk" + std::to_string(ev.chunk) : "");
      if (expanded_micro_batch(ev.mb, e.micro_batches, opt.detail_micro_batches)) {
        const std::vector<OpSlice> slices = expand_step(e, ev);
        for (const OpSlice& s : slices) write_slice(w, pid, ev, s);
        if (!slices.empty()) continue;
      }
      ++st.aggregated_steps;
      args["aggregated"] = "ops not drawn (steady-state micro-batch; see --trace-detail)";
      w.complete(pid, kCompute, name, ev.start, ev.end, std::move(args));
      continue;
    }
    switch (ev.kind) {
      case StepKind::P2P: {
        const int tid = ev.stream == Stream::Compute ? kPpBlocking : ev.stream == Stream::PpForward ? kPpForward : kPpBackward;
        // Blocking p2p holds the compute stream; asynchronous transfers overlap it.
        args["exposed"] = ev.stream == Stream::Compute;
        w.complete(pid, tid, "p2p", ev.start, ev.end, std::move(args));
        break;
      }
      case StepKind::DpComm:
        // Exposed where the estimate counts it so: before the step's first forward (which waits
        // for the parameter gather) and after the pipeline's end (the optimizer waits); in between
        // it runs under compute or a pipeline bubble.
        for (const auto& [a, b, exposed] : {std::tuple{ev.start, std::min(ev.end, first_compute), true},
                                            std::tuple{std::max(ev.start, first_compute),
                                                       std::min(ev.end, e.pipeline_s), false},
                                            std::tuple{std::max(ev.start, e.pipeline_s), ev.end, true}}) {
          if (b <= a) continue;
          args["exposed"] = exposed;
          w.complete(pid, kDp, "gradient reduce / param gather", a, b, args);
        }
        break;
      case StepKind::EpComm:
        // overlap_moe_expert_parallel_comm: the all-to-all runs beside another micro-batch's compute.
        args["exposed"] = false;
        w.complete(pid, group_thread(static_cast<size_t>(Group::EP)), "ep all-to-all", ev.start, ev.end,
                   std::move(args));
        break;
      case StepKind::HostLaunch:
      case StepKind::HostSync: {
        // The host issuing a pass (the device cannot start it before), or waiting for the device
        // (a blocking p2p bundle, the loss).
        const std::string name = ev.kind == StepKind::HostSync ? "host sync"
                                 : ev.mb >= 0                 ? "launch mb" + std::to_string(ev.mb)
                                                              : "launch";
        w.complete(pid, kHost, name, ev.start, ev.end, std::move(args));
        break;
      }
      default: w.complete(pid, kCompute, step_kind_name(ev.kind), ev.start, ev.end, std::move(args));
    }
  }
  for (int32_t r = 0; r < ranks; ++r)
    for (const MemoryPoint& p : memory_track(e, r, opt.detail_micro_batches).points) w.counter(r + 1, p.time, p.bytes);

  const nlohmann::ordered_json other = {{"step_time_ms", e.iteration_time_s * 1e3}, {"schedule", e.schedule},
                                        {"p2p", e.p2p}, {"micro_batches", e.micro_batches},
                                        {"detail_micro_batches", opt.detail_micro_batches},
                                        {"aggregated_passes", st.aggregated_steps}};
  return "{\"displayTimeUnit\": \"ms\",\n\"otherData\": " +
         other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ",\n\"traceEvents\": " + w.finish(ranks) +
         "}\n";
}

}  // namespace trainsim
