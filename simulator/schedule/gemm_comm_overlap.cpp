#include "schedule/gemm_comm_overlap.h"

#include "core/error.h"
#include "engine/engine.h"

namespace trainsim {

double overlapped_time(OverlapKind kind, double gemm_s, double comm_s, int64_t chunks, double slowdown) {
  TRAINSIM_ASSERT(chunks >= 1, "overlap needs at least one chunk");
  const double g = gemm_s * (1 + slowdown);
  Engine e(1);
  const Engine::Label gemm{StepKind::Forward, -1, -1}, comm{StepKind::DpComm, -1, -1};
  if (kind == OverlapKind::Bulk) {
    e.add(0, Stream::Compute, g, gemm);
    e.add(0, Stream::Dp, comm_s, comm);
    return e.run(false).totals[0].end;
  }
  const auto n = static_cast<double>(chunks);
  for (int64_t i = 0; i < chunks; ++i) {
    const Engine::OpId c = e.add(0, Stream::Dp, comm_s / n, comm);
    const Engine::OpId k = e.add(0, Stream::Compute, g / n, gemm);
    if (kind == OverlapKind::AllGatherThenGemm) {
      e.depends(k, c);
    } else {
      e.depends(c, k);
    }
  }
  return e.run(false).totals[0].end;
}

}  // namespace trainsim
