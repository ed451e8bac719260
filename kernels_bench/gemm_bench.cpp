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

// One GEMM in cuBLAS column-major terms: D[m,n] = op(A)[m,k] * op(B)[k,n] (+ C).
struct GemmDims {
  int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  cudaDataType_t a_type = CUDA_R_16BF, b_type = CUDA_R_16BF, c_type = CUDA_R_16BF;
  bool accumulate = false;
  bool fp8 = false, fast_accum = false;
};

Elem elem_of(cudaDataType_t t) {
  return t == CUDA_R_32F ? Elem::F32 : t == CUDA_R_8F_E4M3 ? Elem::FP8E4M3 : t == CUDA_R_8F_E5M2 ? Elem::FP8E5M2 : Elem::BF16;
}

// Key (b, m, k, n, layout) to cuBLAS: TE calls general_gemm(A=weight-like, B=activation-like)
// with m = key n, n = key b*m (tokens are flattened), k = key k, trans from the layout letters.
// FP8 on Hopper requires TN ("A transposed, B not"), so FP8 grads are timed as TN GEMMs on
// pre-transposed operands, E4M3 x E5M2 (TE hybrid recipe), split accumulation for grads.
GemmDims dims_for(int64_t b, int64_t m, int64_t k, int64_t n, const std::string& layout, bool accumulate,
                  const std::string& out_dtype, bool fp8) {
  GemmDims g;
  g.m = n;
  g.n = b * m;
  g.k = k;
  g.ta = layout[0] == 'T';
  g.tb = layout[1] == 'T';
  g.c_type = out_dtype == "fp32" ? CUDA_R_32F : out_dtype == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
  g.accumulate = accumulate;
  if (fp8) {
    bool fprop = layout == "TN";
    g.fp8 = true;
    g.ta = true;
    g.tb = false;
    g.a_type = CUDA_R_8F_E4M3;
    g.b_type = fprop ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
    g.fast_accum = fprop;  // TE: _2X_ACC_FPROP=False, _2X_ACC_DGRAD/_WGRAD=True
  }
  return g;
}

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : (t == CUDA_R_16BF || t == CUDA_R_16F) ? 2 : 1; }

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
  LtPlan(cublasLtHandle_t h, const GemmDims& g, size_t workspace) : g_(g) {
    KB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (g.fp8) {
      int8_t fast = g.fast_accum ? 1 : 0;
      KB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    }
    auto layout = [](cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols) {
      KB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows));
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

// Operands of `count` same-shape GEMMs, contiguous per operand.
struct Operands {
  DeviceBuffer a, b, c;
  size_t a_each = 0, b_each = 0, c_each = 0;
  Operands(const GemmDims& g, int64_t count, cudaStream_t s) {
    a_each = static_cast<size_t>(g.m * g.k) * type_bytes(g.a_type);
    b_each = static_cast<size_t>(g.k * g.n) * type_bytes(g.b_type);
    c_each = static_cast<size_t>(g.m * g.n) * type_bytes(g.c_type);
    a = DeviceBuffer(a_each * count);
    b = DeviceBuffer(b_each * count);
    c = DeviceBuffer(c_each * count);
    fill_random(a, elem_of(g.a_type), 1, 1.0f, s);
    fill_random(b, elem_of(g.b_type), 2, 1.0f, s);
    fill_random(c, elem_of(g.c_type), 3, 0.01f, s);
  }
  [[nodiscard]] const void* a_at(int64_t i) const { return static_cast<const char*>(a.get()) + a_each * i; }
  [[nodiscard]] const void* b_at(int64_t i) const { return static_cast<const char*>(b.get()) + b_each * i; }
  [[nodiscard]] void* c_at(int64_t i) const { return static_cast<char*>(c.get()) + c_each * i; }
};

nlohmann::json dims_json(const GemmDims& g) {
  return {{"cublas_m", g.m}, {"cublas_n", g.n}, {"cublas_k", g.k},  {"transa", g.ta},
          {"transb", g.tb},  {"beta", g.accumulate ? 1 : 0},        {"fast_accum", g.fast_accum}};
}

// cublasGemmGroupedBatchedEx over `ng` equal problems (BF16 only); median seconds or a reason.
nlohmann::json time_grouped_batched(CudaContext& ctx, const GemmDims& g, int64_t ng, Operands& ops,
                                    const MeasureOptions& opt) {
  if (g.fp8) return "unsupported: FP8 inputs";
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
  int lda = static_cast<int>(g.ta ? g.k : g.m), ldb = static_cast<int>(g.tb ? g.n : g.k), ldc = m;
  int group = static_cast<int>(ng);
  float alpha = 1, beta = g.accumulate ? 1 : 0;
  auto launch = [&] {
    KB_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(h, &ta, &tb, &m, &n, &k, &alpha, const_cast<const void* const*>(dev),
                                               g.a_type, &lda, const_cast<const void* const*>(dev + ng), g.b_type, &ldb,
                                               &beta, dev + 2 * ng, g.c_type, &ldc, 1, &group, CUBLAS_COMPUTE_32F));
  };
  try {
    Timing t = ctx.time(opt, launch);
    return t.stats.median;
  } catch (const UnsupportedError& e) {
    return std::string("unsupported: ") + e.what();
  }
}

}  // namespace

std::string cublas_version_string() {
  size_t v = cublasLtGetVersion();
  return strprintf("%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

KernelResult bench_matmul(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt) {
  const auto& s = std::get<MatmulShape>(*item.shape);
  try {
    GemmDims g = dims_for(s.b, s.m, s.k, s.n, s.layout, s.accumulate, s.out_dtype, item.op == "fp8_matmul");
    LtHandle h;
    auto ws_bytes = static_cast<size_t>(opt.workspace_bytes);
    DeviceBuffer ws(ws_bytes);
    Operands ops(g, 1, ctx.stream);
    LtPlan plan(h.get(), g, ws_bytes);
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
  bool fp8 = item.op == "fp8_group_matmul" || s.dtype == "fp8";
  GemmDims g = s.stage == "fwd"            ? dims_for(1, s.m, s.k, s.n, "TN", false, s.out_dtype, fp8)
               : s.stage == "bwd_grad_act" ? dims_for(1, s.m, s.n, s.k, "NN", false, s.out_dtype, fp8)
                                           : dims_for(1, s.n, s.m, s.k, "NT", s.accumulate,
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
    LtPlan plan(h.get(), g, ws_bytes);
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
