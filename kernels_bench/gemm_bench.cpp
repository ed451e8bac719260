// GEMM and grouped GEMM through cuBLASLt, with TransformerEngine's layouts and settings
// (transformer_engine/common/gemm/cublaslt_gemm.cu): FP32 compute, top-1 heuristic, workspace,
// beta = accumulate.
#include <cublasLt.h>
#include <cublas_v2.h>

#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "cuda_context.h"
#include "gemm_config.h"
#include "reference.h"

namespace trainsim::kb {
namespace {

void cublas_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::string msg = strprintf("%s:%d: %s failed: %s", file, line, call, cublasLtGetStatusString(s));
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) throw UnsupportedError(msg);
  throw Error(msg);
}
#define KB_CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)

constexpr int kGroupedStreams = 4;  // TE get_num_compute_streams()

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::FP16: return CUDA_R_16F;
    case DType::F32: return CUDA_R_32F;
    case DType::E4M3: return CUDA_R_8F_E4M3;
    case DType::E5M2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_16BF;
}

Elem elem_of(DType t) {
  return t == DType::F32 ? Elem::F32 : t == DType::E4M3 ? Elem::FP8E4M3 : t == DType::E5M2 ? Elem::FP8E5M2 : Elem::BF16;
}

class LtHandle {
 public:
  LtHandle() { KB_CUBLAS_CHECK(cublasLtCreate(&h_)); }
  ~LtHandle() { cublasLtDestroy(h_); }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  [[nodiscard]] cublasLtHandle_t get() const { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
};

// Descriptors and the heuristic's top algorithm for one GEMM shape.
class LtPlan {
 public:
  /// `scales` points to two device floats (A and B dequantization scales) for FP8 GEMMs.
  LtPlan(cublasLtHandle_t h, const GemmDims& g, size_t workspace, const float* scales = nullptr) : g_(g) {
    KB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (g.fp8) {
      int8_t fast = g.fast_accum ? 1 : 0;
      KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    }
    if (g.a_scale || g.b_scale) {
      if (!scales) throw Error("FP8 GEMM without scale pointers");
      const float* a_scale = scales;
      const float* b_scale = scales + 1;
      KB_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale));
      KB_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale));
    }
    auto layout = [](cublasLtMatrixLayout_t* l, DType t, int64_t rows, int64_t cols) {
      KB_CUBLAS_CHECK(
          cublasLtMatrixLayoutCreate(l, cuda_type(t), static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows));
    };
    layout(&a_, g.a_type, g.ta ? g.k : g.m, g.ta ? g.m : g.k);
    layout(&b_, g.b_type, g.tb ? g.n : g.k, g.tb ? g.k : g.n);
    layout(&c_, g.c_type, g.m, g.n);
    KB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    uint64_t ws = workspace;
    KB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int found = 0;
    KB_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h, op_, a_, b_, c_, c_, pref_, 1, &heur_, &found));
    if (found == 0) throw UnsupportedError("cuBLASLt heuristic returned no algorithm for this GEMM");
  }
  ~LtPlan() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    for (auto* l : {a_, b_, c_})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (op_) cublasLtMatmulDescDestroy(op_);
  }
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;

  void run(cublasLtHandle_t h, const void* a, const void* b, void* c, void* ws, size_t ws_bytes,
           cudaStream_t s) const {
    const float alpha = 1, beta = g_.accumulate ? 1 : 0;
    KB_CUBLAS_CHECK(cublasLtMatmul(h, op_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_, &heur_.algo, ws, ws_bytes, s));
  }

  /// Algorithm identity for reproducibility (cublasLtMatmulAlgoConfigGetAttribute).
  [[nodiscard]] nlohmann::json algo_json() const {
    auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
      uint32_t v = 0;
      size_t written = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&heur_.algo, attr, &v, sizeof v, &written);
      return v;
    };
    return {{"algo_id", get(CUBLASLT_ALGO_CONFIG_ID)},
            {"tile_id", get(CUBLASLT_ALGO_CONFIG_TILE_ID)},
            {"splitk_num", get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
            {"stages_id", get(CUBLASLT_ALGO_CONFIG_STAGES_ID)},
            {"waves_count", heur_.wavesCount},
            {"algo_workspace_bytes", heur_.workspaceSize}};
  }

 private:
  GemmDims g_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_{};
};

// Operands of `count` same-shape GEMMs, each starting on a 256-byte boundary, and the two
// FP8 scales (1.0).
struct Operands {
  DeviceBuffer a, b, c, scales;
  std::vector<size_t> a_off, b_off, c_off;
  Operands(const GemmDims& g, int64_t count, cudaStream_t s) {
    a_off = aligned_offsets(g.a_bytes(), count);
    b_off = aligned_offsets(g.b_bytes(), count);
    c_off = aligned_offsets(g.c_bytes(), count);
    a = DeviceBuffer(aligned_total(g.a_bytes(), count));
    b = DeviceBuffer(aligned_total(g.b_bytes(), count));
    c = DeviceBuffer(aligned_total(g.c_bytes(), count));
    fill_random(a, elem_of(g.a_type), 1, 1.0f, s);
    fill_random(b, elem_of(g.b_type), 2, 1.0f, s);
    fill_random(c, elem_of(g.c_type), 3, 0.01f, s);
    const float one[2] = {1.0f, 1.0f};
    scales = DeviceBuffer(sizeof one);
    KB_CUDA_CHECK(cudaMemcpyAsync(scales.get(), one, sizeof one, cudaMemcpyHostToDevice, s));
    KB_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  [[nodiscard]] const void* a_at(int64_t i) const { return static_cast<const char*>(a.get()) + a_off[static_cast<size_t>(i)]; }
  [[nodiscard]] const void* b_at(int64_t i) const { return static_cast<const char*>(b.get()) + b_off[static_cast<size_t>(i)]; }
  [[nodiscard]] void* c_at(int64_t i) const { return static_cast<char*>(c.get()) + c_off[static_cast<size_t>(i)]; }
  [[nodiscard]] const float* scale_ptrs() const { return static_cast<const float*>(scales.get()); }
};

nlohmann::json dims_json(const GemmDims& g) {
  return {{"cublas_m", g.m}, {"cublas_n", g.n}, {"cublas_k", g.k},  {"transa", g.ta},
          {"transb", g.tb},  {"beta", g.accumulate ? 1 : 0},        {"fast_accum", g.fast_accum},
          {"fp8_scale_pointers", g.a_scale}};
}

#define KB_STR2(x) #x
#define KB_STR(x) KB_STR2(x)
#define CUBLAS_BUILT_WITH KB_STR(CUBLAS_VER_MAJOR) "." KB_STR(CUBLAS_VER_MINOR) "." KB_STR(CUBLAS_VER_PATCH)

// cublasGemmGroupedBatchedEx over `ng` equal problems (BF16 only); median seconds or a reason.
nlohmann::json time_grouped_batched(CudaContext& ctx, const GemmDims& g, int64_t ng, Operands& ops,
                                    const MeasureOptions& opt) {
  if (g.fp8) return "unsupported: FP8 inputs";
#if CUBLAS_VERSION < 120500
  // cuBLAS 12.4 has only the typed cublas[SD]gemmGroupedBatched (no BF16); Ex came in 12.5.
  (void)ctx, (void)ng, (void)ops, (void)opt;
  return "unsupported: cublasGemmGroupedBatchedEx needs cuBLAS 12.5 or later (built with " CUBLAS_BUILT_WITH ")";
#else
  cublasHandle_t h = nullptr;
  KB_CUBLAS_CHECK(cublasCreate(&h));
  struct Guard {
    cublasHandle_t h;
    ~Guard() { cublasDestroy(h); }
  } guard{h};
  KB_CUBLAS_CHECK(cublasSetStream(h, ctx.stream));
  std::vector<const void*> a(ng), b(ng);
  std::vector<void*> c(ng);
  for (int64_t i = 0; i < ng; ++i) {
    a[i] = ops.a_at(i);
    b[i] = ops.b_at(i);
    c[i] = ops.c_at(i);
  }
  DeviceBuffer ptrs(3 * ng * sizeof(void*));
  auto** dev = static_cast<void**>(ptrs.get());
  KB_CUDA_CHECK(cudaMemcpy(dev, a.data(), ng * sizeof(void*), cudaMemcpyHostToDevice));
  KB_CUDA_CHECK(cudaMemcpy(dev + ng, b.data(), ng * sizeof(void*), cudaMemcpyHostToDevice));
  KB_CUDA_CHECK(cudaMemcpy(dev + 2 * ng, c.data(), ng * sizeof(void*), cudaMemcpyHostToDevice));
  cublasOperation_t ta = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  int lda = static_cast<int>(g.lda()), ldb = static_cast<int>(g.ldb()), ldc = m;
  int group = static_cast<int>(ng);
  float alpha = 1, beta = g.accumulate ? 1 : 0;
  auto launch = [&] {
    KB_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(h, &ta, &tb, &m, &n, &k, &alpha, const_cast<const void* const*>(dev),
                                               cuda_type(g.a_type), &lda, const_cast<const void* const*>(dev + ng),
                                               cuda_type(g.b_type), &ldb, &beta, dev + 2 * ng, cuda_type(g.c_type), &ldc,
                                               1, &group, CUBLAS_COMPUTE_32F));
  };
  try {
    Timing t = ctx.time(opt, launch);
    return t.stats.median;
  } catch (const UnsupportedError& e) {
    return std::string("unsupported: ") + e.what();
  }
#endif
}

}  // namespace

std::string cublas_version_string() {
  size_t v = cublasLtGetVersion();
  return strprintf("%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

KernelResult bench_matmul(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt) {
  const auto& s = std::get<MatmulShape>(*item.shape);
  try {
    GemmDims g = gemm_dims(s.b, s.m, s.k, s.n, s.layout, s.accumulate, s.out_dtype, is_fp8_op(item.op));
    LtHandle h;
    auto ws_bytes = static_cast<size_t>(opt.workspace_bytes);
    DeviceBuffer ws(ws_bytes);
    Operands ops(g, 1, ctx.stream);
    LtPlan plan(h.get(), g, ws_bytes, ops.scale_ptrs());
    Timing t = ctx.time(opt, [&] { plan.run(h.get(), ops.a_at(0), ops.b_at(0), ops.c_at(0), ws.get(), ws_bytes, ctx.stream); });
    nlohmann::json extra = plan.algo_json();
    extra.update(dims_json(g));
    extra["workspace_bytes"] = ws_bytes;
    return ok_result(t, g.fp8 ? "cublaslt_heuristic0_fp8_tn" : "cublaslt_heuristic0", extra.dump());
  } catch (const UnsupportedError& e) {
    return unsupported_result(e.what());
  }
}

KernelResult bench_grouped(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt) {
  const auto& s = std::get<GroupedMatmulShape>(*item.shape);
  // Stage -> per-expert GEMM with the fwd dims M (tokens), N (out), K (in):
  // fwd Y = X W^T (TN); dgrad dX = dY W (NN); wgrad dW = dY^T X (NT, into main_grad).
  bool fp8 = is_fp8_op(item.op) || s.dtype == "fp8";
  GemmDims g = s.stage == "fwd"            ? gemm_dims(1, s.m, s.k, s.n, "TN", false, s.out_dtype, fp8)
               : s.stage == "bwd_grad_act" ? gemm_dims(1, s.m, s.n, s.k, "NN", false, s.out_dtype, fp8)
                                           : gemm_dims(1, s.n, s.m, s.k, "NT", s.accumulate,
                                                       s.accumulate ? s.main_grad_dtype : s.out_dtype, fp8);
  try {
    LtHandle h;
    auto ws_bytes = static_cast<size_t>(opt.workspace_bytes);
    std::vector<DeviceBuffer> ws;
    std::array<cudaStream_t, kGroupedStreams> streams{};
    std::array<cudaEvent_t, kGroupedStreams> joins{};
    cudaEvent_t fork = nullptr;
    struct Cleanup {
      std::array<cudaStream_t, kGroupedStreams>& s;
      std::array<cudaEvent_t, kGroupedStreams>& j;
      cudaEvent_t& f;
      ~Cleanup() {
        for (auto x : s)
          if (x) cudaStreamDestroy(x);
        for (auto x : j)
          if (x) cudaEventDestroy(x);
        if (f) cudaEventDestroy(f);
      }
    } cleanup{streams, joins, fork};
    for (int i = 0; i < kGroupedStreams; ++i) {
      KB_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      KB_CUDA_CHECK(cudaEventCreateWithFlags(&joins[i], cudaEventDisableTiming));
      ws.emplace_back(ws_bytes);
    }
    KB_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    Operands ops(g, s.ng, ctx.stream);
    LtPlan plan(h.get(), g, ws_bytes, ops.scale_ptrs());
    // TE multi-stream path: expert i on stream i % 4, each with its own workspace, joined
    // back into the timed stream.
    auto launch = [&] {
      KB_CUDA_CHECK(cudaEventRecord(fork, ctx.stream));
      for (int i = 0; i < kGroupedStreams; ++i) KB_CUDA_CHECK(cudaStreamWaitEvent(streams[i], fork, 0));
      for (int64_t e = 0; e < s.ng; ++e) {
        int i = static_cast<int>(e % kGroupedStreams);
        plan.run(h.get(), ops.a_at(e), ops.b_at(e), ops.c_at(e), ws[i].get(), ws_bytes, streams[i]);
      }
      for (int i = 0; i < kGroupedStreams; ++i) {
        KB_CUDA_CHECK(cudaEventRecord(joins[i], streams[i]));
        KB_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream, joins[i], 0));
      }
    };
    Timing t = ctx.time(opt, launch);
    nlohmann::json extra = plan.algo_json();
    extra.update(dims_json(g));
    extra["streams"] = kGroupedStreams;
    extra["alternatives"] = {{"cublas_grouped_batched_ex_median_s", time_grouped_batched(ctx, g, s.ng, ops, opt)}};
    return ok_result(t, "cublaslt_multistream4", extra.dump());
  } catch (const UnsupportedError& e) {
    return unsupported_result(e.what());
  }
}

}  // namespace trainsim::kb

namespace trainsim::kb {

std::vector<CheckLine> self_check_gemm(CudaContext& ctx, const MeasureOptions& opt, std::vector<TimedPoint>& timed,
                                       double peak_bf16) {
  std::vector<CheckLine> out;
  LtHandle h;
  auto ws_bytes = static_cast<size_t>(opt.workspace_bytes);
  DeviceBuffer ws(ws_bytes);
  struct Case {
    const char* layout;
    bool accumulate;
    const char* out_dtype;
    bool fp8;
    int64_t count;    // experts (grouped operands at aligned offsets)
    int64_t m, k, n;  // key dims (cuBLAS m = n, n = m)
  };
  // Sizes that are not multiples of the tiles (multiples of 16 for FP8); the grouped case has
  // operands of 1920/1152 bytes, so only the 256-byte alignment keeps experts 2 and 3 aligned.
  const Case cases[] = {{"TN", false, "bf16", false, 1, 80, 64, 48}, {"NN", false, "bf16", false, 1, 80, 64, 48},
                        {"NT", true, "fp32", false, 1, 80, 64, 48},  {"TN", false, "bf16", false, 3, 24, 24, 40},
                        {"TN", false, "bf16", true, 1, 80, 64, 48},  {"NN", false, "bf16", true, 1, 80, 64, 48}};
  for (const Case& c : cases) {
    GemmDims g = gemm_dims(1, c.m, c.k, c.n, c.layout, c.accumulate, c.out_dtype, c.fp8);
    std::string name = strprintf("gemm %s %s%s m=%lld k=%lld n=%lld%s", c.fp8 ? "fp8" : "bf16", c.layout,
                                 c.accumulate ? " beta=1 fp32" : "", static_cast<long long>(c.m),
                                 static_cast<long long>(c.k), static_cast<long long>(c.n),
                                 c.count > 1 ? " grouped x3 (aligned)" : "");
    try {
      Operands ops(g, c.count, ctx.stream);
      LtPlan plan(h.get(), g, ws_bytes, ops.scale_ptrs());
      std::vector<std::vector<float>> c_in;
      for (int64_t e = 0; e < c.count; ++e)
        c_in.push_back(download(ops.c_at(e), static_cast<size_t>(g.m * g.n), elem_of(g.c_type)));
      for (int64_t e = 0; e < c.count; ++e) plan.run(h.get(), ops.a_at(e), ops.b_at(e), ops.c_at(e), ws.get(), ws_bytes, ctx.stream);
      KB_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      bool ok = true;
      std::string detail;
      for (int64_t e = 0; e < c.count; ++e) {
        auto a = download(ops.a_at(e), static_cast<size_t>(g.m * g.k), elem_of(g.a_type));
        auto b = download(ops.b_at(e), static_cast<size_t>(g.k * g.n), elem_of(g.b_type));
        auto d = download(ops.c_at(e), static_cast<size_t>(g.m * g.n), elem_of(g.c_type));
        const bool fp32 = g.c_type == DType::F32;
        Comparison cmp = compare(d, gemm_ref(g, a, b, c_in[static_cast<size_t>(e)]), fp32 ? 1e-3 : 3e-2, fp32 ? 1e-4 : 1e-2);
        ok = ok && cmp.ok;
        if (detail.empty() || !cmp.ok) detail = cmp.detail;
      }
      out.push_back({name, ok, detail});
    } catch (const Error& e) {
      out.push_back({name, false, e.what()});
    }
  }
  // Square bf16 GEMMs of growing size: efficiency <= 1 of the bf16 peak, time grows.
  for (int64_t n : {1024, 2048, 4096, 8192}) {
    GemmDims g = gemm_dims(1, n, n, n, "TN", false, "bf16", false);
    Operands ops(g, 1, ctx.stream);
    LtPlan plan(h.get(), g, ws_bytes);
    Timing t = ctx.time(opt, [&] { plan.run(h.get(), ops.a_at(0), ops.b_at(0), ops.c_at(0), ws.get(), ws_bytes, ctx.stream); });
    timed.push_back({"gemm bf16 TN square", strprintf("gemm bf16 TN %lld^3", static_cast<long long>(n)),
                     2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n), t.stats.median,
                     peak_bf16});
  }
  return out;
}

}  // namespace trainsim::kb
