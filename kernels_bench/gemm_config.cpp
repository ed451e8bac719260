// GEMM configuration.
#include "gemm_config.h"

namespace trainsim::kb {

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16:
    case DType::FP16: return 2;
    case DType::E4M3:
    case DType::E5M2: return 1;
  }
  return 0;
}

GemmDims gemm_dims(int64_t b, int64_t m, int64_t k, int64_t n, const std::string& layout, bool accumulate,
                   const std::string& out_dtype, bool fp8) {
  GemmDims g;
  g.m = n;
  g.n = b * m;
  g.k = k;
  g.ta = layout.size() == 2 && layout[0] == 'T';
  g.tb = layout.size() == 2 && layout[1] == 'T';
  g.c_type = out_dtype == "fp32" ? DType::F32 : out_dtype == "fp16" ? DType::FP16 : DType::BF16;
  g.accumulate = accumulate;
  if (fp8) {
    bool fprop = layout == "TN";
    g.fp8 = true;
    g.ta = true;
    g.tb = false;
    g.a_type = DType::E4M3;
    g.b_type = fprop ? DType::E4M3 : DType::E5M2;
    g.fast_accum = fprop;  // TE: _2X_ACC_FPROP=False, _2X_ACC_DGRAD/_WGRAD=True
    g.a_scale = g.b_scale = true;
  }
  return g;
}

size_t aligned_total(size_t each, int64_t count, size_t align) {
  size_t stride = (each + align - 1) / align * align;
  return stride * static_cast<size_t>(count);
}

std::vector<size_t> aligned_offsets(size_t each, int64_t count, size_t align) {
  size_t stride = (each + align - 1) / align * align;
  std::vector<size_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(stride * static_cast<size_t>(i));
  return out;
}

}  // namespace trainsim::kb
