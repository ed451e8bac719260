// Pipeline costs: the per-micro-batch pass times of every virtual chunk and the transfer
// between stages.
#include "comm/collective.h"
#include "estimate/stages.h"
#include "model/moe_dispatch.h"

namespace trainsim::detail {

void pipeline_costs(const Plan& plan, const Env& env, ChunkResults& results, PipelineCosts& costs,
                    SmallVector<PhaseSums, 8>& rank_sums) {
  const ModelConfig& m = *plan.model;
  const Settings& s = plan;
  const SystemConfig& sys = *plan.system;
  const NetworkChoice& nets = env.nets;
  const int64_t pp = plan.par.pp, v = plan.par.vpp;
  const bool split = plan.split_backward();
  costs.chunks.resize(static_cast<size_t>(pp));
  costs.a2a.resize(plan.ovl.a2a_overlap ? static_cast<size_t>(pp) : 0);
  costs.a2a_slowdown = 0;
  costs.host = plan.mode == Mode::Default && sys.host_framework.has_value();
  if (costs.host) {
    const HostFramework& f = *sys.host_framework;
    costs.launch = f.eager_op_s;
    costs.p2p_host = f.collective_s;
    costs.sync = f.sync_s;
  }
  rank_sums.assign(static_cast<size_t>(pp), {});
  for (int64_t r = 0; r < pp; ++r) {
    costs.chunks[static_cast<size_t>(r)].clear();
    costs.chunks[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    if (plan.ovl.a2a_overlap) {
      costs.a2a[static_cast<size_t>(r)].clear();
      costs.a2a[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    }
    for (const auto& spec : plan.chunks[static_cast<size_t>(r)]) {
      const ChunkResult& cr = results.get(spec);
      const PhaseSums& ps = cr.sums;
      ChunkTimes t = ps.times(split);
      if (costs.host) {
        // The host model: a forward with sync points takes its synced time (not with merged
        // steps, whose pieces are the passes' cost); the head's loss is read after its forward.
        if (cr.fwd_synced && !plan.ovl.a2a_overlap) {
          t.fwd = cr.fwd_sync.device_first + cr.fwd_sync.device_rest;
          t.fwd_first = cr.fwd_sync.device_first;
          t.host_fwd_first = cr.fwd_sync.host_first;
          t.host_fwd = cr.fwd_sync.host_first + cr.fwd_sync.host_rest;
        }
        t.loss_sync = spec.head && s.host.check_for_nan;
      }
      costs.chunks[static_cast<size_t>(r)].push_back(t);
      if (plan.ovl.a2a_overlap) costs.a2a[static_cast<size_t>(r)].push_back({cr.a2a_fwd, cr.a2a_bwd});
      rank_sums[static_cast<size_t>(r)].add(ps);
    }
  }
  const double p2p_bytes = static_cast<double>(plan.batch.micro_batch_size * plan.batch.seq_len * m.hidden_size) *
                           s.prec.element_bytes() / static_cast<double>(plan.par.cp) /
                           (plan.par.sp ? static_cast<double>(plan.par.tp) : 1.0);
  // The all-to-all kernels take the EP network's processor_usage share of the SMs; DeepEP's take
  // moe_deepep_num_sms of the accelerator's SMs, HybridEP's moe_hybridep_num_sms where given.
  if (plan.ovl.a2a_overlap) {
    const bool hybridep_sms = s.moe.dispatcher == MoeDispatcher::Flex && !s.moe.deepep && s.moe.hybridep_num_sms;
    costs.a2a_slowdown = s.moe.deepep ? deepep_slowdown(s.moe.deepep_num_sms.value_or(kDeepEpDefaultNumSms), *sys.sm_count)
                         : hybridep_sms ? deepep_slowdown(*s.moe.hybridep_num_sms, *sys.sm_count)
                                        : contention(env, Group::EP);
  }
  // One pipeline exchange (its collectives counted once in the efficiency log).
  const auto timed = [&](Group g, Collective kind, double bytes, int64_t n, const char* stage) {
    EfficiencySource how;
    const double t = collective_time(sys, s, nets.net(g), kind, bytes, n, stage, &how);
    if (env.log) env.log->collective(kind, how);
    return t;
  };
  if (plan.mode == Mode::Default && s.par.scatter_gather_tensors_in_pipeline) {
    // Narayanan et al. 2021, §4.1: the TP ranks of a stage hold the same activation; each sends
    // its 1/tp slice to its peer, and the next stage all-gathers the slices over its TP group
    // (2021 Megatron-LM p2p_communication.py: split_tensor_into_1d_equal_chunks, gather_split_1d_tensor).
    const auto tp = static_cast<double>(plan.par.tp);
    costs.p2p = timed(Group::PP, Collective::P2P, p2p_bytes / tp, 2, "pp") +
                timed(Group::TP, Collective::AllGather, p2p_bytes, plan.par.tp, "tp");
  } else {
    costs.p2p = pp > 1 ? timed(Group::PP, Collective::P2P, p2p_bytes, 2, "pp") : 0;
  }

}

}  // namespace trainsim::detail
