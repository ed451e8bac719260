// Host launchers of the few device kernels (mem_kernels.cu): data fill and the memory-bound
// patterns timed by memory_bench.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::kb {

/// Deterministic pseudo-random fill; `elem` 0 fp32, 1 bf16, 2 fp8 e4m3, 3 fp8 e5m2.
void launch_fill(void* ptr, size_t count, int elem, uint32_t seed, float scale, cudaStream_t s);
/// out[p, :] = in[index[p], :] for p < rows; rows of `row_bytes` (a multiple of 16).
void launch_gather_rows(const void* in, void* out, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t s);
/// out[t, :] = sum_j in[index[t * topk + j], :] (bf16 rows of `hidden`), fp32 accumulation.
void launch_unpermute_reduce(const void* in, void* out, const int32_t* index, int64_t tokens, int64_t topk,
                             int64_t hidden, cudaStream_t s);
/// index[p] = permutation of [0, rows) (p * stride mod rows with an odd stride), or token p / topk.
void launch_make_index(int32_t* index, int64_t rows, int64_t divisor, cudaStream_t s);
/// Fused cross-entropy forward: per row of bf16 logits, lse (fp32) and loss = lse - x[target];
/// 16-byte loads when vocab % 8 == 0 (launch shape from ce_launch).
void launch_ce_forward(const void* logits, const int32_t* target, float* lse, float* loss, int64_t rows,
                       int64_t vocab, cudaStream_t s);
/// Fused cross-entropy backward: grad = softmax(x) - onehot(target), bf16.
void launch_ce_backward(const void* logits, const int32_t* target, const float* lse, void* grad, int64_t rows,
                        int64_t vocab, cudaStream_t s);
/// Reads `bytes` of `buf` (a multiple of 16) to evict L2 with clean lines; `sink` is a device
/// word that is never written in practice (it keeps the loads from being optimized away).
void launch_read_flush(const void* buf, size_t bytes, unsigned* sink, int sm_count, cudaStream_t s);
/// An empty kernel (launch latency).
void launch_empty(cudaStream_t s);

}  // namespace trainsim::kb
