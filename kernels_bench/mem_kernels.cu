// The few device kernels of kernels_bench: data fill, MoE permutation patterns, fused
// cross-entropy, the L2 flush and an empty kernel. Everything else is library calls from host C++.
#include "mem_kernels.h"

#include "launch_shapes.h"
#include "mem_kernels_device.cuh"

namespace trainsim::kb {
namespace {

constexpr int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

}  // namespace

void launch_fill(void* ptr, size_t count, int elem, uint32_t seed, float scale, cudaStream_t s) {
  auto n = static_cast<int64_t>(count);
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(ptr, n, elem, seed, scale);
}

void launch_gather_rows(const void* in, void* out, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t s) {
  const LaunchShape l = row_launch(rows, row_bytes);
  gather_kernel<<<dim3(l.grid_x, l.grid_y), l.block, 0, s>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out),
                                                            index, rows, l.vec);
}

void launch_unpermute_reduce(const void* in, void* out, const int32_t* index, int64_t tokens, int64_t topk,
                             int64_t hidden, cudaStream_t s) {
  const LaunchShape l = row_launch(tokens, hidden * 2);
  unpermute_kernel<<<dim3(l.grid_x, l.grid_y), l.block, 0, s>>>(static_cast<const uint4*>(in),
                                                               static_cast<uint4*>(out), index, tokens, topk, l.vec);
}

void launch_make_index(int32_t* index, int64_t rows, int64_t divisor, cudaStream_t s) {
  make_index_kernel<<<blocks_for(rows), kThreads, 0, s>>>(index, rows, divisor);
}

void launch_ce_forward(const void* logits, const int32_t* target, float* lse, float* loss, int64_t rows,
                       int64_t vocab, cudaStream_t s) {
  const LaunchShape l = ce_launch(rows, vocab);
  const auto* x = static_cast<const __nv_bfloat16*>(logits);
  if (l.vec == 8) {
    ce_forward_kernel<8><<<l.grid_x, l.block, 0, s>>>(x, target, lse, loss, vocab);
  } else {
    ce_forward_kernel<1><<<l.grid_x, l.block, 0, s>>>(x, target, lse, loss, vocab);
  }
}

void launch_ce_backward(const void* logits, const int32_t* target, const float* lse, void* grad, int64_t rows,
                        int64_t vocab, cudaStream_t s) {
  const LaunchShape l = ce_launch(rows, vocab);
  const auto* x = static_cast<const __nv_bfloat16*>(logits);
  auto* g = static_cast<__nv_bfloat16*>(grad);
  if (l.vec == 8) {
    ce_backward_kernel<8><<<l.grid_x, l.block, 0, s>>>(x, target, lse, g, vocab);
  } else {
    ce_backward_kernel<1><<<l.grid_x, l.block, 0, s>>>(x, target, lse, g, vocab);
  }
}

void launch_read_flush(const void* buf, size_t bytes, unsigned* sink, int sm_count, cudaStream_t s) {
  const auto n = static_cast<int64_t>(bytes / 16);
  read_flush_kernel<<<static_cast<unsigned>(4 * sm_count), 512, 0, s>>>(static_cast<const uint4*>(buf), n, sink);
}

void launch_empty(cudaStream_t s) { empty_kernel<<<1, 1, 0, s>>>(); }

}  // namespace trainsim::kb
