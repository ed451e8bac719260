#include "schedule/host_lowering.h"

#include <algorithm>

#include "core/small_vector.h"

namespace trainsim {

double host_issue_fraction(double host, double device, double launch) {
  if (!(host > 0)) return 1;
  return std::clamp(std::max(launch, host - device) / host, 0.0, 1.0);
}

void add_host_stream(Engine& e, const PipelineCosts& c) {
  if (!c.host) return;
  for (int32_t r = 0; r < e.ranks(); ++r) {
    const std::vector<ChunkTimes>& times = c.chunks[static_cast<size_t>(r)];
    // The pass each kind of step last issued: the pieces of a merged step (EP all-to-all overlap)
    // share its label and its host op, issued before the first piece.
    Engine::Label last[3] = {{StepKind::Forward, -2, -2}, {StepKind::Backward, -2, -2}, {StepKind::BackwardWeight, -2, -2}};
    Engine::OpId last_host = -1;  // the host's latest op: what it issues next waits for it
    auto sync_after = [&](Engine::OpId x) {
      last_host = e.add(r, Stream::Host, c.sync, {StepKind::HostSync, -1, -1});
      e.depends(last_host, x);
    };
    // Blocking p2p: the transfers of one bundle (consecutive p2p ops) are issued once the host
    // gets there; its issue and Megatron's synchronize after it are one host op after the
    // transfers (the issue's cost moved behind them: the next pass is launched as late).
    SmallVector<Engine::OpId, 4> bundle;
    auto end_bundle = [&] {
      if (bundle.empty()) return;
      const Engine::OpId h = e.add(r, Stream::Host, c.p2p_host + c.sync, {StepKind::HostSync, -1, e.label(bundle[0]).mb});
      for (Engine::OpId p : bundle) e.depends(h, p);
      last_host = h;
      bundle.clear();
    };
    for (Engine::OpId x = e.first_op(r, Stream::Compute); x >= 0; x = e.next_op(x)) {
      const Engine::Label l = e.label(x);
      if (l.kind == StepKind::P2P) {
        if (last_host >= 0) e.depends(x, last_host);
        bundle.push_back(x);
        continue;
      }
      end_bundle();
      const int k = l.kind == StepKind::Forward ? 0 : l.kind == StepKind::BackwardWeight ? 2 : 1;
      if (l.chunk < 0 || (last[k].chunk == l.chunk && last[k].mb == l.mb)) continue;
      last[k] = l;
      const ChunkTimes& t = times[static_cast<size_t>(l.chunk)];
      const double host = k == 0 ? t.host_fwd : k == 1 ? t.host_bwd : t.host_bwd_weight;
      const double device = k == 0 ? t.fwd : k == 1 ? t.bwd : t.bwd_weight;
      const Engine::Label hl{StepKind::HostLaunch, l.chunk, l.mb};
      if (k == 0 && t.fwd_first > 0 && e.duration(x) == t.fwd) {
        // Up to the first sync the host runs ahead as for any pass; the rest waits for the device
        // to get there and then runs in lockstep with it (compute/host_cost.h synced_pass).
        const Engine::OpId h1 = e.add(r, Stream::Host, t.host_fwd_first, hl);
        e.depends_at(x, h1, host_issue_fraction(t.host_fwd_first, t.fwd_first, c.launch));
        const Engine::OpId h2 = e.add(r, Stream::Host, t.host_fwd - t.host_fwd_first, hl);
        e.depends_at(h2, x, device > 0 ? std::min(1.0, t.fwd_first / device) : 1);
        last_host = h2;
      } else if (host > 0) {
        last_host = e.add(r, Stream::Host, host, hl);
        e.depends_at(x, last_host, host_issue_fraction(host, device, c.launch));
      }
      if (k == 0 && t.loss_sync) sync_after(x);
    }
    end_bundle();
  }
}

}  // namespace trainsim
