// Memory-bound patterns (device copy, MoE permutation, fused cross-entropy) and launch latency.
#include <nlohmann/json.hpp>

#include "cuda_context.h"
#include "mem_kernels.h"

namespace trainsim::kb {
namespace {

constexpr int kLatencyLaunches = 1000;  // empty kernels per sample; time per launch = total / N

void check_launch() { KB_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

KernelResult bench_memory(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt) {
  const MemoryCase& c = item.mem;
  cudaStream_t s = ctx.stream;
  if (c.pattern == "launch") {
    // Device-side gap between back-to-back launches (no flush, no host sync inside a sample).
    Timing t = ctx.time(opt, [&] { launch_empty(s); }, false, kLatencyLaunches);
    check_launch();
    return ok_result(t, "empty_kernel_back_to_back", nlohmann::json{{"launches_per_sample", kLatencyLaunches}}.dump());
  }
  if (c.pattern == "copy") {
    auto bytes = static_cast<size_t>(c.copy_bytes);
    DeviceBuffer src(bytes), dst(bytes);
    fill_random(src, Elem::BF16, 7, 1.0f, s);
    Timing t = ctx.time(opt, [&] { KB_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s)); });
    return ok_result(t, "cudaMemcpyAsync_d2d", "");
  }
  if (c.pattern == "permute_fwd" || c.pattern == "permute_bwd") {
    int64_t rows = c.tokens * c.topk, row_bytes = c.hidden * c.elem_bytes;
    DeviceBuffer tokens(static_cast<size_t>(c.tokens * row_bytes)), a(static_cast<size_t>(rows * row_bytes)),
        b(static_cast<size_t>(rows * row_bytes)), to_token(static_cast<size_t>(rows) * 4),
        perm(static_cast<size_t>(rows) * 4);
    fill_random(tokens, Elem::BF16, 8, 1.0f, s);
    fill_random(a, Elem::BF16, 9, 1.0f, s);
    launch_make_index(static_cast<int32_t*>(to_token.get()), rows, c.topk, s);  // each token topk times
    launch_make_index(static_cast<int32_t*>(perm.get()), rows, 1, s);          // a permutation of rows
    check_launch();
    auto* tok_idx = static_cast<const int32_t*>(to_token.get());
    auto* perm_idx = static_cast<const int32_t*>(perm.get());
    std::function<void()> launch;
    if (c.pattern == "permute_fwd") {
      // Permutation: gather every token topk times, then reorder the permuted rows (2 kernels).
      launch = [&] {
        launch_gather_rows(tokens.get(), a.get(), tok_idx, rows, row_bytes, s);
        launch_gather_rows(a.get(), b.get(), perm_idx, rows, row_bytes, s);
      };
    } else {
      // UnPermutation: reorder the rows back, then reduce topk rows per token (2 kernels).
      launch = [&] {
        launch_gather_rows(a.get(), b.get(), perm_idx, rows, row_bytes, s);
        launch_unpermute_reduce(b.get(), tokens.get(), perm_idx, c.tokens, c.topk, c.hidden, s);
      };
    }
    Timing t = ctx.time(opt, launch);
    check_launch();
    return ok_result(t, "gather_kernels", "");
  }
  if (c.pattern == "ce_fusion") {
    int64_t n = c.tokens * c.vocab;
    DeviceBuffer logits(static_cast<size_t>(n) * 2), grad(static_cast<size_t>(n) * 2),
        target(static_cast<size_t>(c.tokens) * 4), lse(static_cast<size_t>(c.tokens) * 4),
        loss(static_cast<size_t>(c.tokens) * 4);
    fill_random(logits, Elem::BF16, 10, 4.0f, s);
    launch_make_index(static_cast<int32_t*>(target.get()), c.tokens, 1, s);  // targets < tokens <= vocab
    check_launch();
    auto* tgt = static_cast<const int32_t*>(target.get());
    Timing t = ctx.time(opt, [&] {
      launch_ce_forward(logits.get(), tgt, static_cast<float*>(lse.get()), static_cast<float*>(loss.get()), c.tokens,
                        c.vocab, s);
      launch_ce_backward(logits.get(), tgt, static_cast<const float*>(lse.get()), grad.get(), c.tokens, c.vocab, s);
    });
    check_launch();
    return ok_result(t, "fused_ce_fwd_bwd_kernels", "");
  }
  return unsupported_result("unknown memory pattern '" + c.pattern + "'");
}

}  // namespace trainsim::kb
