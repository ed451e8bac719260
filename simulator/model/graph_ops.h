// The op builders of a chunk's layers (model/layers.cpp assembles them into layers): the context
// they share and one function per op family, defined in ops_basic.cpp (norms, Linears,
// activations, embedding, loss), ops_attention.cpp and ops_moe.cpp.
#pragma once
#include <string_view>

#include "model/graph.h"
#include "calibration/shape_key.h"
#include "model/moe_kernels.h"

namespace trainsim::graph_ops {

struct Ctx {
  const ModelConfig& m;
  const Settings& s;
  double B, S, S_l, S_sp, H;
  int64_t tp, cp;
  double e;          // activation element bytes
  double a;          // Linear activation bytes (1 under fp8)
  double w;          // Linear weight bytes in a GEMM (1 under fp8)
  bool sp;
  bool fp8;
  KeyDtype wgrad_dtype;  // the weight gradient's output dtype (bf16 or fp32)
  bool dummy_wgrad;  // TE ≥ 2.3 allocates a dummy wgrad per unique Linear weight shape
  bool megatron;     // default mode: the tensors Megatron/TE save (else the peer's bookkeeping)
  const ChunkEnv& env;
};

struct MoeShape {
  double T;       // local tokens B·S_sp
  double P;       // permuted tokens on this rank (balanced routing, capacity padded)
  double El;      // local experts
  double M;       // tokens per local expert after dispatch and the ETP all-gather
};

// Bytes one rank's dispatch (or combine) moves per micro-batch, by dispatcher (Megatron
// token_dispatcher.py): `alltoall` sends its k·T routed copies and the busiest rank receives
// `imbalance` times that; `allgather` gathers every token of the EP×ETP group (the full tensor);
// DeepEP (`flex`) sends a token once per destination node across nodes (forwarded inside the
// node over NVLink, hidden under the RDMA transfer) and like alltoall inside one node.
struct DispatchComm {
  Collective fwd, bwd;
  double bytes;
  int64_t n;
  bool etp_separate;  // alltoall: the ETP all-gather / reduce-scatter follows the all-to-all
  // Default mode's flex dispatcher: DeepEP / HybridEP kernels (CommCall::flex), `bytes` over
  // NVLink and `rdma_bytes` to other nodes per rank, on `sms` SMs (0: HybridEP).
  bool flex = false;
  double rdma_bytes = 0;
  int32_t sms = 0;
  float nvl_share = 1, rdma_share = 1;  // CommCall::nvl_share / rdma_share
};

Kernel mem_kernel(double bytes, const char* bw = "default");
void add_batch(KernelList& list, const KernelBatch& b, const char* bw = "default");
void add_comm(Leaf& l, Phase p, Collective c, Group g, double bytes, int64_t n, const char* stage);
void layer_norm(Leaf& l, const Ctx& c, std::string_view name, double width = 0);
void linear_common(const Ctx& c, Leaf& l, double m_rows, double in, double out, double flops,
                   double x_in, double x_out, double wt, bool fp8);
double saved_input_bytes(const Ctx& c, bool fp8);
bool fp8_cast_transpose(const Ctx& c, bool column_parallel, bool sequence_parallel);
void linear_col(Leaf& l, const Ctx& c, std::string_view name, double in, double out, bool allow_fp8 = true);
void linear_row(Leaf& l, const Ctx& c, std::string_view name, double in, double out);
void linear_dup(Leaf& l, const Ctx& c, std::string_view name, double in, double out);
void qk_layernorm(Leaf& l, const Ctx& c, double d);
void zero_leaf(Leaf& l, std::string_view name);
void bias_dropout_add(Leaf& l, const Ctx& c, std::string_view name);
double swiglu_bytes(const Ctx& c, double out, bool backward);
void swiglu(Leaf& l, const Ctx& c, double out_l);
void gelu(Leaf& l, const Ctx& c, double width_l);
void embedding(Leaf& l, const Ctx& c, double Vt);
void cross_entropy(Leaf& l, const Ctx& c, double Vt);
void fuse_linear_cross_entropy(const Ctx& c, Leaf& out, Leaf& ce, double Vt);
void core_attention(Leaf& l, const Ctx& c, double d_qk, double d_v, bool mla);
void router(Leaf& l, const Ctx& c);
MoeShape moe_shape(const Ctx& c);
void add_dispatch(Leaf& l, Phase p, const DispatchComm& d, bool forward, const char* stage);
DispatchComm dispatch_comm(const Ctx& c, const MoeShape& sh, bool combine);
bool fp8_row_padding(const Ctx& c, const MoeShape& sh);
void megatron_permutation(Leaf& l, const Ctx& c, const MoeShape& sh);
void megatron_unpermutation(Leaf& l, const Ctx& c, const MoeShape& sh);
void permutation(Leaf& l, const Ctx& c, const MoeShape& sh);
void unpermutation(Leaf& l, const Ctx& c, const MoeShape& sh);
void grouped_linear(Leaf& l, const Ctx& c, const MoeShape& sh, std::string_view name, double in, double out, bool col);
void expert_swiglu(Leaf& l, const Ctx& c, const MoeShape& sh, double width);

}  // namespace trainsim::graph_ops
