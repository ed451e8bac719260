// Causal fused attention (fwd and bwd) through cudnn-frontend's SDPA nodes, built as
// TransformerEngine builds them (sdpa_graph.h describes the graphs; the frontend lowers them to
// cuDNN's fused flash-attention engines). Any refusal while building the plan is recorded as
// "unsupported" with the frontend's message.
#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cmath>
#include <memory>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "cuda_context.h"
#include "reference.h"
#include "sdpa_graph.h"

namespace trainsim::kb {
namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

// Building and planning: a failure means cuDNN does not support the graph.
void build_check(fe::error_t st, const char* step) {
  if (st.is_bad()) throw UnsupportedError(std::string("cudnn-frontend ") + step + ": " + st.get_message());
}

fe::DataType_t fe_type(const std::string& dtype) {
  return dtype == "fp32" ? fe::DataType_t::FLOAT : fe::DataType_t::BFLOAT16;
}

class Handle {
 public:
  explicit Handle(cudaStream_t s) {
    if (cudnnCreate(&h_) != CUDNN_STATUS_SUCCESS) throw Error("cudnnCreate failed");
    if (cudnnSetStream(h_, s) != CUDNN_STATUS_SUCCESS) throw Error("cudnnSetStream failed");
  }
  ~Handle() { cudnnDestroy(h_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  [[nodiscard]] cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

// A built cudnn-frontend graph with one buffer per tensor of its description.
class SdpaPlan {
 public:
  SdpaPlan(const SdpaGraph& d, cudnnHandle_t h) : desc_(d), graph_(std::make_shared<fe::graph::Graph>()) {
    graph_->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    auto input = [&](const char* name) {
      const SdpaTensor& t = d.at(name);
      return graph_->tensor(fe::graph::Tensor_attributes()
                                .set_name(name)
                                .set_uid(t.uid)
                                .set_dim(t.dims)
                                .set_stride(t.strides)
                                .set_data_type(fe_type(t.dtype)));
    };
    auto output = [&](const TensorPtr& x, const char* name) {
      const SdpaTensor& t = d.at(name);
      x->set_output(true).set_name(name).set_uid(t.uid).set_dim(t.dims).set_stride(t.strides).set_data_type(
          fe_type(t.dtype));
    };
    // Each tensor is created once and passed to the SDPA node, which derives K^T and the GQA
    // broadcast itself.
    TensorPtr q = input("Q"), k = input("K"), v = input("V");
    if (!d.backward) {
      auto opt = fe::graph::SDPA_attributes()
                     .set_name("sdpa_fwd")
                     .set_generate_stats(d.generate_stats)
                     .set_causal_mask(d.causal)
                     .set_attn_scale(d.attn_scale);
      auto [o, stats] = graph_->sdpa(q, k, v, opt);
      output(o, "O");
      output(stats, "Stats");
    } else {
      TensorPtr o = input("O"), d_o = input("dO"), stats = input("Stats");
      auto opt = fe::graph::SDPA_backward_attributes()
                     .set_name("sdpa_bwd")
                     .set_causal_mask(d.causal)
                     .set_attn_scale(d.attn_scale);
      auto [dq, dk, dv] = graph_->sdpa_backward(q, k, v, o, d_o, stats, opt);
      output(dq, "dQ");
      output(dk, "dK");
      output(dv, "dV");
    }
    build_check(graph_->validate(), "validate");
    build_check(graph_->build_operation_graph(h), "build_operation_graph");
    build_check(graph_->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
    build_check(graph_->check_support(h), "check_support");
    build_check(graph_->build_plans(h), "build_plans");
    build_check(graph_->get_workspace_size(workspace_), "get_workspace_size");
    ws_ = DeviceBuffer(static_cast<size_t>(workspace_));
    for (const auto& t : d.tensors) {
      buffers_.emplace_back(SdpaGraph::buffer_bytes(t));
      pack_[t.uid] = buffers_.back().get();
    }
  }

  [[nodiscard]] DeviceBuffer& buffer(const std::string& name) {
    for (size_t i = 0; i < desc_.tensors.size(); ++i)
      if (desc_.tensors[i].name == name) return buffers_[i];
    throw Error("sdpa plan has no tensor '" + name + "'");
  }

  void execute(cudnnHandle_t h) {
    fe::error_t st = graph_->execute(h, pack_, ws_.get());
    if (st.is_bad()) throw Error("cudnn-frontend execute: " + st.get_message());
  }

  [[nodiscard]] int64_t workspace() const { return workspace_; }

 private:
  SdpaGraph desc_;
  std::shared_ptr<fe::graph::Graph> graph_;
  int64_t workspace_ = 0;
  DeviceBuffer ws_;
  std::vector<DeviceBuffer> buffers_;
  std::unordered_map<int64_t, void*> pack_;
};

// Random inputs; for the backward, Stats of a softmax that keeps exp(S - stats) finite.
void fill_inputs(SdpaPlan& p, const SdpaGraph& d, cudaStream_t s, float scale) {
  uint32_t seed = 21;
  for (const auto& t : d.tensors)
    if (!t.output) fill_random(p.buffer(t.name), t.dtype == "fp32" ? Elem::F32 : Elem::BF16, seed++, scale, s);
}

// BHSD-contiguous copy of a strided [b, h, s, d] tensor read back from the device.
std::vector<float> to_bhsd(const std::vector<float>& flat, const SdpaTensor& t) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(t.dims[0] * t.dims[1] * t.dims[2] * t.dims[3]));
  for (int64_t b = 0; b < t.dims[0]; ++b)
    for (int64_t h = 0; h < t.dims[1]; ++h)
      for (int64_t i = 0; i < t.dims[2]; ++i)
        for (int64_t x = 0; x < t.dims[3]; ++x)
          out.push_back(flat[static_cast<size_t>(b * t.strides[0] + h * t.strides[1] + i * t.strides[2] + x * t.strides[3])]);
  return out;
}

std::vector<float> read(SdpaPlan& p, const SdpaGraph& d, const std::string& name) {
  const SdpaTensor& t = d.at(name);
  Elem e = t.dtype == "fp32" ? Elem::F32 : Elem::BF16;
  return to_bhsd(download(p.buffer(name).get(), SdpaGraph::buffer_bytes(t) / elem_bytes(e), e), t);
}

}  // namespace

std::string cudnn_version_string() {
  size_t v = cudnnGetVersion();
  return strprintf("%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}

KernelResult bench_sdpa(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt) {
  const auto& a = std::get<SdpaShape>(*item.shape);
  const bool bwd = item.family == Family::SdpaBwd;
  if (a.kv_head_num < 1 || a.head_num % a.kv_head_num != 0)
    return unsupported_result(strprintf("head_num %lld is not a multiple of kv_head_num %lld",
                                        static_cast<long long>(a.head_num), static_cast<long long>(a.kv_head_num)));
  try {
    const SdpaGraph d = sdpa_graph(a, bwd);
    Handle h(ctx.stream);
    SdpaPlan plan(d, h.get());
    fill_inputs(plan, d, ctx.stream, 1.0f);
    Timing t = ctx.time(opt, [&] { plan.execute(h.get()); });
    nlohmann::json extra = {{"workspace_bytes", plan.workspace()},
                            {"mask", "causal_top_left"},
                            {"layout", a.qkv_contiguous ? "sbhd" : "sbhd_strided_batch"},
                            {"graph", "cudnn-frontend sdpa" + std::string(bwd ? "_backward" : "") +
                                          ", io bf16, intermediate/compute fp32"},
                            {"flops_convention", "full S^2 (no causal halving)"}};
    return ok_result(t, bwd ? "cudnn_frontend_sdpa_bwd" : "cudnn_frontend_sdpa_fwd", extra.dump());
  } catch (const UnsupportedError& e) {
    return unsupported_result(e.what());
  }
}

std::vector<CheckLine> self_check_sdpa(CudaContext& ctx) {
  std::vector<CheckLine> out;
  SdpaShape a;
  a.batch = 2;
  a.seq_len = 64;
  a.head_num = 4;
  a.kv_head_num = 2;  // GQA
  a.qk_head_dim = 64;
  a.v_head_dim = 64;
  SdpaProblem p{a.batch, a.head_num, a.kv_head_num, a.seq_len, a.qk_head_dim, a.v_head_dim, true, 0};
  const char* name_f = "sdpa fwd causal GQA 4/2 heads s=64 d=64 b=2";
  const char* name_b = "sdpa bwd causal GQA 4/2 heads s=64 d=64 b=2";
  try {
    Handle h(ctx.stream);
    const SdpaGraph fd = sdpa_graph(a, false), bd = sdpa_graph(a, true);
    p.scale = fd.attn_scale;
    SdpaPlan fwd(fd, h.get());
    fill_inputs(fwd, fd, ctx.stream, 1.0f);
    fwd.execute(h.get());
    KB_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    auto q = read(fwd, fd, "Q"), k = read(fwd, fd, "K"), v = read(fwd, fd, "V");
    SdpaFwdRef ref = sdpa_fwd_ref(p, q, k, v);
    Comparison o = compare(read(fwd, fd, "O"), ref.o, 2e-2, 2e-2);
    Comparison st = compare(read(fwd, fd, "Stats"), ref.stats, 5e-3, 1e-3);
    out.push_back({name_f, o.ok && st.ok, "O " + o.detail + "; Stats " + st.detail});
    // Backward on the forward's own Q, K, V, O and Stats.
    SdpaPlan back(bd, h.get());
    for (const char* t : {"Q", "K", "V", "O", "Stats"})
      KB_CUDA_CHECK(cudaMemcpy(back.buffer(t).get(), fwd.buffer(t).get(), fwd.buffer(t).bytes(), cudaMemcpyDeviceToDevice));
    fill_random(back.buffer("dO"), Elem::BF16, 40, 1.0f, ctx.stream);
    back.execute(h.get());
    KB_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    SdpaBwdRef g = sdpa_bwd_ref(p, q, k, v, read(back, bd, "dO"));
    Comparison dq = compare(read(back, bd, "dQ"), g.dq, 3e-2, 5e-2), dk = compare(read(back, bd, "dK"), g.dk, 3e-2, 5e-2),
               dv = compare(read(back, bd, "dV"), g.dv, 3e-2, 5e-2);
    out.push_back({name_b, dq.ok && dk.ok && dv.ok, "dQ " + dq.detail + "; dK " + dk.detail + "; dV " + dv.detail});
  } catch (const Error& e) {
    if (out.empty()) out.push_back({name_f, false, e.what()});
    out.push_back({name_b, false, e.what()});
  }
  return out;
}

}  // namespace trainsim::kb
