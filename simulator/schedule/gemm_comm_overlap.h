// A GEMM and a tensor-parallel collective overlapped as TransformerEngine's userbuffers do
// (`tp_comm_overlap`), replayed on the engine: compute and communication on their own streams,
// chunks linked by their data dependencies.
#pragma once

#include <cstdint>

namespace trainsim {

enum class OverlapKind {
  AllGatherThenGemm,  // pipelined: GEMM chunk i needs all-gather chunk i (fprop of QKV / FC1)
  GemmThenReduceScatter,  // pipelined: reduce-scatter chunk i needs GEMM chunk i (fprop of proj / FC2)
  Bulk,               // independent: the collective runs beside a GEMM it does not feed (dgrad / wgrad)
};

/// Time (seconds) of `gemm_s` of GEMM and `comm_s` of collective overlapped as `kind`, split into
/// `chunks` pieces (the TP size) when pipelined. The GEMM runs `slowdown` (fraction) slower while
/// it shares the GPU with the collective. The exposed residual of a pipelined pair is one chunk
/// of the collective (the first all-gather chunk or the last reduce-scatter chunk).
[[nodiscard]] double overlapped_time(OverlapKind kind, double gemm_s, double comm_s, int64_t chunks, double slowdown);

}  // namespace trainsim
