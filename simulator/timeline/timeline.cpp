#include "timeline/timeline.h"

#include <algorithm>

namespace trainsim {

const char* stream_name(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::PpForward: return "pp_forward";
    case Stream::PpBackward: return "pp_backward";
    case Stream::Dp: return "dp";
    case Stream::Ep: return "ep";
    case Stream::Host: return "host";
    case Stream::kCount: break;
  }
  return "?";
}

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::Forward: return "forward";
    case StepKind::Backward: return "backward";
    case StepKind::BackwardInput: return "backward_input";
    case StepKind::BackwardWeight: return "backward_weight";
    case StepKind::P2P: return "p2p";
    case StepKind::Straggler: return "straggler";
    case StepKind::DpComm: return "dp_comm";
    case StepKind::Optimizer: return "optimizer";
    case StepKind::EpComm: return "ep_comm";
    case StepKind::HostLaunch: return "host_launch";
    case StepKind::HostSync: return "host_sync";
  }
  return "?";
}

double Timeline::span() const {
  double t = 0;
  for (const auto& r : totals) t = std::max(t, r.end);
  for (const auto& e : events) t = std::max(t, e.end);
  return t;
}

double Timeline::rank_end(int32_t rank) const {
  double t = totals.empty() ? 0 : totals[static_cast<size_t>(rank)].end;
  for (const auto& e : events)
    if (e.rank == rank) t = std::max(t, e.end);
  return t;
}

double Timeline::busy(int32_t rank, StepKind kind) const {
  double t = 0;
  for (const auto& e : events)
    if (e.rank == rank && e.kind == kind) t += e.end - e.start;
  return t;
}

}  // namespace trainsim
