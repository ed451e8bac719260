// Memory-bound patterns (device copy, MoE permutation, fused cross-entropy) and launch latency.
#include <nlohmann/json.hpp>

#include "cuda_context.h"
#include "core/text.h"
#include "mem_kernels.h"
#include "reference.h"

namespace trainsim::kb {
namespace {

constexpr int kLatencyLaunches = 1000;  // empty kernels per sample; time per launch = total / N

void check_launch() { KB_CUDA_CHECK(cudaGetLastError()); }

// The launch floor: a chain of tiny memory-bound kernels (a 4 KiB fill each), launched one by
// one from the host (eager) or replayed from one captured CUDA graph (graph); per launch =
// time of the chain / its length.
constexpr int kChainLaunches = 256;
constexpr size_t kChainElems = 1024;  // fp32: 4 KiB written per kernel

KernelResult bench_launch_chain(CudaContext& ctx, const MemoryCase& c, const MeasureOptions& opt) {
  cudaStream_t s = ctx.stream;
  DeviceBuffer buf(kChainElems * 4);
  auto chain = [&] {
    for (int i = 0; i < kChainLaunches; ++i) launch_fill(buf.get(), kChainElems, 0, static_cast<uint32_t>(i), 1.0f, s);
  };
  const nlohmann::json extra{{"launches_per_sample", kChainLaunches}, {"bytes_per_kernel", kChainElems * 4}};
  if (c.pattern == "launch_chain_eager") {
    Timing t = ctx.time(opt, [&] { launch_fill(buf.get(), kChainElems, 0, 1, 1.0f, s); }, false, kChainLaunches);
    check_launch();
    return ok_result(t, "fill_4kib_back_to_back", extra.dump());
  }
  // One eager chain first: the kernel's module is loaded (NVRTC, lazy loading) outside the capture.
  chain();
  KB_CUDA_CHECK(cudaStreamSynchronize(s));
  struct Graph {  // released on every path, an error's included
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ~Graph() {
      if (exec) (void)cudaGraphExecDestroy(exec);
      if (graph) (void)cudaGraphDestroy(graph);
    }
  } g;
  KB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    chain();
  } catch (...) {
    (void)cudaStreamEndCapture(s, &g.graph);  // leave the stream usable for the next item
    throw;
  }
  KB_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph));
  KB_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  Timing t = ctx.time(opt, [&] { KB_CUDA_CHECK(cudaGraphLaunch(g.exec, s)); }, false);
  check_launch();
  // Per kernel: the graph's time over its nodes.
  SampleStats& st = t.stats;
  for (double* x : {&st.median, &st.p10, &st.p90, &st.min, &st.max, &st.mean}) *x /= kChainLaunches;
  return ok_result(t, "fill_4kib_cuda_graph_replay", extra.dump());
}

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
  if (c.pattern == "launch_chain_eager" || c.pattern == "launch_chain_graph") return bench_launch_chain(ctx, c, opt);
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

namespace trainsim::kb {

std::vector<CheckLine> self_check_memory(CudaContext& ctx, const MeasureOptions& opt, std::vector<TimedPoint>& timed,
                                         double peak_bytes_per_s) {
  std::vector<CheckLine> out;
  cudaStream_t s = ctx.stream;
  // Cross-entropy on 16-byte loads (vocab % 8 == 0) and on the scalar path.
  for (int64_t vocab : {int64_t{1000}, int64_t{1001}}) {
    const int64_t rows = 5;
    std::string name = strprintf("cross-entropy fwd+bwd rows=%lld vocab=%lld", static_cast<long long>(rows),
                                 static_cast<long long>(vocab));
    try {
      DeviceBuffer logits(static_cast<size_t>(rows * vocab) * 2), grad(static_cast<size_t>(rows * vocab) * 2),
          target(static_cast<size_t>(rows) * 4), lse(static_cast<size_t>(rows) * 4), loss(static_cast<size_t>(rows) * 4);
      fill_random(logits, Elem::BF16, 31, 4.0f, s);
      std::vector<int32_t> tgt = {0, 7, 999, 500, 3};
      KB_CUDA_CHECK(cudaMemcpy(target.get(), tgt.data(), tgt.size() * 4, cudaMemcpyHostToDevice));
      launch_ce_forward(logits.get(), static_cast<const int32_t*>(target.get()), static_cast<float*>(lse.get()),
                        static_cast<float*>(loss.get()), rows, vocab, s);
      launch_ce_backward(logits.get(), static_cast<const int32_t*>(target.get()), static_cast<const float*>(lse.get()),
                         grad.get(), rows, vocab, s);
      check_launch();
      KB_CUDA_CHECK(cudaStreamSynchronize(s));
      CrossEntropyRef ref =
          cross_entropy_ref(rows, vocab, download(logits.get(), static_cast<size_t>(rows * vocab), Elem::BF16), tgt);
      Comparison l = compare(download(loss.get(), static_cast<size_t>(rows), Elem::F32), ref.loss, 1e-3, 1e-3);
      Comparison g = compare(download(grad.get(), static_cast<size_t>(rows * vocab), Elem::BF16), ref.grad, 1e-3, 1e-2);
      out.push_back({name, l.ok && g.ok, "loss " + l.detail + "; grad " + g.detail});
    } catch (const Error& e) {
      out.push_back({name, false, e.what()});
    }
  }
  // Row gather (permutation) and the topk reduction (unpermutation).
  {
    const int64_t tokens = 6, topk = 2, hidden = 24, rows = tokens * topk;
    std::string name = "permute gather + unpermute reduce tokens=6 topk=2 hidden=24";
    try {
      DeviceBuffer in(static_cast<size_t>(tokens * hidden) * 2), permuted(static_cast<size_t>(rows * hidden) * 2),
          back(static_cast<size_t>(tokens * hidden) * 2), index(static_cast<size_t>(rows) * 4);
      fill_random(in, Elem::BF16, 32, 1.0f, s);
      std::vector<int32_t> idx(static_cast<size_t>(rows));
      for (int64_t p = 0; p < rows; ++p) idx[static_cast<size_t>(p)] = static_cast<int32_t>((p * 5) % tokens);
      KB_CUDA_CHECK(cudaMemcpy(index.get(), idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
      auto* ip = static_cast<const int32_t*>(index.get());
      launch_gather_rows(in.get(), permuted.get(), ip, rows, hidden * 2, s);
      // Reducing permuted row p = t*topk + j with the identity index sums the two copies.
      std::vector<int32_t> ident(static_cast<size_t>(rows));
      for (int64_t p = 0; p < rows; ++p) ident[static_cast<size_t>(p)] = static_cast<int32_t>(p);
      DeviceBuffer id_index(static_cast<size_t>(rows) * 4);
      KB_CUDA_CHECK(cudaMemcpy(id_index.get(), ident.data(), ident.size() * 4, cudaMemcpyHostToDevice));
      launch_unpermute_reduce(permuted.get(), back.get(), static_cast<const int32_t*>(id_index.get()), tokens, topk,
                              hidden, s);
      check_launch();
      KB_CUDA_CHECK(cudaStreamSynchronize(s));
      auto x = download(in.get(), static_cast<size_t>(tokens * hidden), Elem::BF16);
      std::vector<float> want_perm, want_back;
      for (int64_t p = 0; p < rows; ++p)
        for (int64_t c = 0; c < hidden; ++c) want_perm.push_back(x[static_cast<size_t>(idx[static_cast<size_t>(p)] * hidden + c)]);
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t c = 0; c < hidden; ++c)
          want_back.push_back(round_to_bf16(want_perm[static_cast<size_t>((t * topk) * hidden + c)] +
                                            want_perm[static_cast<size_t>((t * topk + 1) * hidden + c)]));
      Comparison a = compare(download(permuted.get(), want_perm.size(), Elem::BF16), want_perm, 0, 0);
      Comparison b = compare(download(back.get(), want_back.size(), Elem::BF16), want_back, 0, 0);
      out.push_back({name, a.ok && b.ok, "gather " + a.detail + "; reduce " + b.detail});
    } catch (const Error& e) {
      out.push_back({name, false, e.what()});
    }
  }
  // Device copies of growing size: efficiency <= 1 of the memory peak, time grows.
  for (size_t mib : {size_t{64}, size_t{256}, size_t{1024}}) {
    DeviceBuffer src(mib << 20), dst(mib << 20);
    fill_random(src, Elem::BF16, 33, 1.0f, s);
    Timing t = ctx.time(opt, [&] { KB_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), mib << 20, cudaMemcpyDeviceToDevice, s)); });
    timed.push_back({"device copy", strprintf("copy %zu MiB", mib), 2.0 * static_cast<double>(mib << 20),
                     t.stats.median, peak_bytes_per_s});
  }
  return out;
}

}  // namespace trainsim::kb
