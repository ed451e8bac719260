// The device code of kernels_bench's few kernels (mem_kernels.h): compiled by nvcc through
// mem_kernels.cu, or at run time by NVRTC in a build without nvcc (mem_kernels_nvrtc.cpp, which
// embeds this file). Kernel parameters are the launchers' (mem_kernels.cu, mem_kernels_nvrtc.cpp).
#pragma once

#ifdef __CUDACC_RTC__
// NVRTC has no C library headers.
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
#define INFINITY __int_as_float(0x7f800000)
#endif

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace trainsim::kb {
namespace {

constexpr int kThreads = 256;

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

// Rows of 16-byte chunks: x = chunk of the row, y = row (grid-stride over rows); no division.
__global__ void gather_kernel(const uint4* in, uint4* out, const int32_t* index, int64_t rows, int64_t vec) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= vec) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) out[r * vec + c] = in[int64_t(index[r]) * vec + c];
}

__global__ void unpermute_kernel(const uint4* in, uint4* out, const int32_t* index, int64_t tokens, int64_t topk,
                                 int64_t vec) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= vec) return;
  for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < topk; ++j) {
      uint4 v = in[int64_t(index[t * topk + j]) * vec + c];
      const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&v);
      for (int e = 0; e < 8; ++e) acc[e] += __bfloat162float(h[e]);
    }
    uint4 o;
    __nv_bfloat16* oh = reinterpret_cast<__nv_bfloat16*>(&o);
    for (int e = 0; e < 8; ++e) oh[e] = __float2bfloat16(acc[e]);
    out[t * vec + c] = o;
  }
}

// VEC bf16 logits per load: 8 (one 16-byte load) when rows are 16-byte aligned, else 1.
template <int VEC>
struct Pack {
  __nv_bfloat16 v[VEC];
};

template <int VEC>
__device__ Pack<VEC> load_pack(const __nv_bfloat16* row, int64_t i) {
  Pack<VEC> p;
  if constexpr (VEC == 8) {
    *reinterpret_cast<uint4*>(&p) = reinterpret_cast<const uint4*>(row)[i];
  } else {
    p.v[0] = row[i];
  }
  return p;
}

__device__ void online_add(float& m, float& s, float x) {
  if (x > m) {
    s = s * __expf(m - x) + 1;
    m = x;
  } else {
    s += __expf(x - m);
  }
}

// One block per row: online max / sum of exp, then a block reduction of (max, sum) pairs.
template <int VEC>
__global__ void ce_forward_kernel(const __nv_bfloat16* logits, const int32_t* target, float* lse, float* loss,
                                  int64_t vocab) {
  __shared__ float sm[kThreads], ss[kThreads];
  const __nv_bfloat16* row = logits + blockIdx.x * vocab;
  float m = -INFINITY, s = 0;
  for (int64_t i = threadIdx.x; i < vocab / VEC; i += blockDim.x) {
    Pack<VEC> p = load_pack<VEC>(row, i);
    for (int e = 0; e < VEC; ++e) online_add(m, s, __bfloat162float(p.v[e]));
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

template <int VEC>
__global__ void ce_backward_kernel(const __nv_bfloat16* logits, const int32_t* target, const float* lse,
                                   __nv_bfloat16* grad, int64_t vocab) {
  const __nv_bfloat16* row = logits + blockIdx.x * vocab;
  __nv_bfloat16* g = grad + blockIdx.x * vocab;
  const float l = lse[blockIdx.x];
  const int64_t t = target[blockIdx.x];
  for (int64_t i = threadIdx.x; i < vocab / VEC; i += blockDim.x) {
    Pack<VEC> p = load_pack<VEC>(row, i);
    Pack<VEC> o;
    for (int e = 0; e < VEC; ++e)
      o.v[e] = __float2bfloat16(__expf(__bfloat162float(p.v[e]) - l) - (i * VEC + e == t ? 1.0f : 0.0f));
    if constexpr (VEC == 8) {
      reinterpret_cast<uint4*>(g)[i] = *reinterpret_cast<const uint4*>(&o);
    } else {
      g[i] = o.v[0];
    }
  }
}

// L2 flush by reading: the lines it leaves are clean. The store never happens (the XOR of
// the fill pattern is not the magic value) but keeps the loads alive.
__global__ void read_flush_kernel(const uint4* buf, int64_t n, unsigned* sink) {
  unsigned acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u && sink) *sink = acc;
}

__global__ void empty_kernel() {}

}  // namespace
}  // namespace trainsim::kb
