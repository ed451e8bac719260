// The few device kernels of kernels_bench: data fill, MoE permutation patterns, fused
// cross-entropy and an empty kernel. Everything else is library calls from host C++.
#include "mem_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace trainsim::kb {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

__device__ uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__global__ void fill_kernel(void* p, int64_t n, int elem, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = mix(static_cast<uint32_t>(i) ^ mix(seed + static_cast<uint32_t>(i >> 32)));
    float v = (static_cast<float>(h & 0xffffffu) / 8388608.0f - 1.0f) * scale;
    if (elem == 0) {
      static_cast<float*>(p)[i] = v;
    } else if (elem == 1) {
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    } else if (elem == 2) {
      static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);
    } else {
      static_cast<__nv_fp8_e5m2*>(p)[i] = __nv_fp8_e5m2(v);
    }
  }
}

__global__ void make_index_kernel(int32_t* index, int64_t rows, int64_t divisor) {
  // p * stride mod rows is a permutation when gcd(stride, rows) = 1 (rows here are 2^a * 3^b).
  constexpr int64_t kStride = 1000003;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < rows; p += int64_t(gridDim.x) * blockDim.x)
    index[p] = static_cast<int32_t>((p * kStride) % rows / divisor);
}

__global__ void gather_kernel(const uint4* in, uint4* out, const int32_t* index, int64_t rows, int64_t vec) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * vec; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = in[int64_t(index[i / vec]) * vec + i % vec];
}

__global__ void unpermute_kernel(const uint4* in, uint4* out, const int32_t* index, int64_t tokens, int64_t topk,
                                 int64_t vec) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < tokens * vec;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = i / vec, c = i % vec;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < topk; ++j) {
      uint4 v = in[int64_t(index[t * topk + j]) * vec + c];
      const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v);
      for (int e = 0; e < 8; ++e) acc[e] += __bfloat162float(h[e]);
    }
    uint4 o;
    __nv_bfloat16* oh = reinterpret_cast<__nv_bfloat16*>(&o);
    for (int e = 0; e < 8; ++e) oh[e] = __float2bfloat16(acc[e]);
    out[i] = o;
  }
}

// One block per row: online max / sum of exp, then a block reduction of (max, sum) pairs.
__global__ void ce_forward_kernel(const __nv_bfloat16* logits, const int32_t* target, float* lse, float* loss,
                                  int64_t vocab) {
  __shared__ float sm[kThreads], ss[kThreads];
  const __nv_bfloat16* row = logits + blockIdx.x * vocab;
  float m = -INFINITY, s = 0;
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x) {
    float x = __bfloat162float(row[v]);
    if (x > m) {
      s = s * __expf(m - x) + 1;
      m = x;
    } else {
      s += __expf(x - m);
    }
  }
  sm[threadIdx.x] = m;
  ss[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      float m2 = sm[threadIdx.x + w], s2 = ss[threadIdx.x + w], m1 = sm[threadIdx.x], s1 = ss[threadIdx.x];
      float mm = fmaxf(m1, m2);
      ss[threadIdx.x] = (m1 == -INFINITY ? 0 : s1 * __expf(m1 - mm)) + (m2 == -INFINITY ? 0 : s2 * __expf(m2 - mm));
      sm[threadIdx.x] = mm;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float l = sm[0] + __logf(ss[0]);
    lse[blockIdx.x] = l;
    loss[blockIdx.x] = l - __bfloat162float(row[target[blockIdx.x]]);
  }
}

__global__ void ce_backward_kernel(const __nv_bfloat16* logits, const int32_t* target, const float* lse,
                                   __nv_bfloat16* grad, int64_t vocab) {
  const __nv_bfloat16* row = logits + blockIdx.x * vocab;
  __nv_bfloat16* g = grad + blockIdx.x * vocab;
  float l = lse[blockIdx.x];
  int32_t t = target[blockIdx.x];
  for (int64_t v = threadIdx.x; v < vocab; v += blockDim.x)
    g[v] = __float2bfloat16(__expf(__bfloat162float(row[v]) - l) - (v == t ? 1.0f : 0.0f));
}

__global__ void empty_kernel() {}

}  // namespace

void launch_fill(void* ptr, size_t count, int elem, uint32_t seed, float scale, cudaStream_t s) {
  auto n = static_cast<int64_t>(count);
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(ptr, n, elem, seed, scale);
}

void launch_gather_rows(const void* in, void* out, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t s) {
  int64_t vec = row_bytes / 16;
  gather_kernel<<<blocks_for(rows * vec), kThreads, 0, s>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out),
                                                            index, rows, vec);
}

void launch_unpermute_reduce(const void* in, void* out, const int32_t* index, int64_t tokens, int64_t topk,
                             int64_t hidden, cudaStream_t s) {
  int64_t vec = hidden / 8;
  unpermute_kernel<<<blocks_for(tokens * vec), kThreads, 0, s>>>(static_cast<const uint4*>(in),
                                                                 static_cast<uint4*>(out), index, tokens, topk, vec);
}

void launch_make_index(int32_t* index, int64_t rows, int64_t divisor, cudaStream_t s) {
  make_index_kernel<<<blocks_for(rows), kThreads, 0, s>>>(index, rows, divisor);
}

void launch_ce_forward(const void* logits, const int32_t* target, float* lse, float* loss, int64_t rows,
                       int64_t vocab, cudaStream_t s) {
  ce_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(logits),
                                                                     target, lse, loss, vocab);
}

void launch_ce_backward(const void* logits, const int32_t* target, const float* lse, void* grad, int64_t rows,
                        int64_t vocab, cudaStream_t s) {
  ce_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16*>(logits), target, lse, static_cast<__nv_bfloat16*>(grad), vocab);
}

void launch_empty(cudaStream_t s) { empty_kernel<<<1, 1, 0, s>>>(); }

}  // namespace trainsim::kb
