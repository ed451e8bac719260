// CPU references for `kernels_bench --self-check`: the device computes small problems, copies
// inputs and outputs back, and these functions say what the answer should have been.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm_config.h"

namespace trainsim::kb {

/// Decoders of the storage formats the benches fill (bit patterns as stored on the device).
[[nodiscard]] float bf16_to_float(uint16_t bits);
[[nodiscard]] float e4m3_to_float(uint8_t bits);
[[nodiscard]] float e5m2_to_float(uint8_t bits);
/// Float to the nearest bf16 (ties to even), returned as a float.
[[nodiscard]] float round_to_bf16(float x);

/// D = op(A) op(B) (+ C when g.accumulate), column-major as cuBLAS (lda/ldb from `g`, ldc = m).
/// The scales multiply A and B (FP8 dequantization; 1 otherwise).
[[nodiscard]] std::vector<float> gemm_ref(const GemmDims& g, const std::vector<float>& a, const std::vector<float>& b,
                                          const std::vector<float>& c, float a_scale = 1, float b_scale = 1);

/// Attention problem in BHSD order (contiguous): Q [b, hq, s, dqk], K [b, hkv, s, dqk],
/// V [b, hkv, s, dv]; query head h reads kv head h / (hq / hkv) (GQA).
struct SdpaProblem {
  int64_t b = 1, hq = 1, hkv = 1, s = 1, dqk = 1, dv = 1;
  bool causal = true;  // top-left: query i sees keys j <= i
  float scale = 1;
};
struct SdpaFwdRef {
  std::vector<float> o;      // [b, hq, s, dv]
  std::vector<float> stats;  // [b, hq, s]: max + log(sum exp), natural log
};
[[nodiscard]] SdpaFwdRef sdpa_fwd_ref(const SdpaProblem& p, const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v);
struct SdpaBwdRef {
  std::vector<float> dq, dk, dv;  // shapes of q, k, v; dK/dV summed over the heads sharing a kv head
};
[[nodiscard]] SdpaBwdRef sdpa_bwd_ref(const SdpaProblem& p, const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, const std::vector<float>& d_o);

/// Cross-entropy per row: lse = log sum exp(x), loss = lse - x[target], grad = softmax - onehot.
struct CrossEntropyRef {
  std::vector<float> lse, loss, grad;
};
[[nodiscard]] CrossEntropyRef cross_entropy_ref(int64_t rows, int64_t vocab, const std::vector<float>& logits,
                                                const std::vector<int32_t>& target);

/// Element-wise comparison: ok when |got - want| <= atol + rtol * |want| everywhere.
struct Comparison {
  bool ok = true;
  double max_abs_err = 0, max_rel_err = 0;  // rel: |got - want| / max(|want|, atol)
  size_t worst = 0;                         // index of the largest violation (or error)
  std::string detail;                       // "max abs err 1.2e-03, max rel err 3.4e-03 at [17]"
};
[[nodiscard]] Comparison compare(const std::vector<float>& got, const std::vector<float>& want, double atol,
                                 double rtol);

}  // namespace trainsim::kb
