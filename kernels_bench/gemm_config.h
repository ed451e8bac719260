// How a GEMM shape key becomes a cuBLASLt call (TransformerEngine's layouts and settings,
// transformer_engine/common/gemm/cublaslt_gemm.cu), without CUDA types so it is tested on CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::kb {

enum class DType { BF16, FP16, F32, E4M3, E5M2 };
[[nodiscard]] size_t dtype_bytes(DType t);

/// One GEMM in cuBLAS column-major terms: D[m,n] = op(A)[m,k] * op(B)[k,n] (+ C when beta = 1).
struct GemmDims {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  DType a_type = DType::BF16, b_type = DType::BF16, c_type = DType::BF16;
  bool accumulate = false;  // beta = 1 (wgrad into main_grad)
  bool fp8 = false, fast_accum = false;
  // cuBLASLt FP8 GEMMs dequantize through per-tensor scale pointers
  // (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER); TE always sets them. A D scale is needed only
  // for an FP8 output, which no key asks for.
  bool a_scale = false, b_scale = false;
  [[nodiscard]] int64_t lda() const { return ta ? k : m; }
  [[nodiscard]] int64_t ldb() const { return tb ? n : k; }
  [[nodiscard]] size_t a_bytes() const { return static_cast<size_t>(m * k) * dtype_bytes(a_type); }
  [[nodiscard]] size_t b_bytes() const { return static_cast<size_t>(k * n) * dtype_bytes(b_type); }
  [[nodiscard]] size_t c_bytes() const { return static_cast<size_t>(m * n) * dtype_bytes(c_type); }
};

/// Key (b, m, k, n, layout, accumulate, out_dtype) to cuBLAS: TE calls general_gemm(A =
/// weight-like, B = activation-like) with m = key n, n = key b*m, k = key k and the layout
/// letters as transa/transb. FP8 on Hopper must be TN, so FP8 grads are timed as TN GEMMs on
/// pre-transposed operands, E4M3 x E5M2 (TE hybrid recipe) with split accumulation for grads.
[[nodiscard]] GemmDims gemm_dims(int64_t b, int64_t m, int64_t k, int64_t n, const std::string& layout,
                                 bool accumulate, const std::string& out_dtype, bool fp8);

/// Byte offsets of `count` consecutive blocks of `each` bytes, each rounded up to `align`
/// (cuBLASLt picks its fastest kernels only for 16-byte aligned operands, TE aligns to 256).
[[nodiscard]] std::vector<size_t> aligned_offsets(size_t each, int64_t count, size_t align = 256);
/// Total bytes to allocate for aligned_offsets(each, count, align).
[[nodiscard]] size_t aligned_total(size_t each, int64_t count, size_t align = 256);

}  // namespace trainsim::kb
