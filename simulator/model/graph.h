// The leaf ops one micro-batch runs on one pipeline chunk, sharded by TP/SP/CP/EP: FLOPs,
// bytes, efficiency keys, collectives and activation bookkeeping per op (the peer's leaf modules).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "calibration/op_class.h"
#include "calibration/shape_key.h"
#include "plan/groups.h"
#include "plan/plan.h"
#include "plan/settings.h"
#include "core/small_vector.h"

namespace trainsim {

/// The three cost phases of a leaf (the peer's fwd / bwd_grad_act / bwd_grad_w).
enum Phase : int { kFwd = 0, kBwdAct = 1, kBwdW = 2 };


/// One collective issued by a leaf in one phase.
struct CommCall {
  Collective kind;
  Group group;
  double bytes;       // full (un-sharded) tensor bytes, as the peer passes them
  int64_t n;          // group size
  const char* stage;  // the peer's comm_stage tag (affects inter-node all-to-all)
  // The flex dispatcher's DeepEP / HybridEP kernels (model/moe_dispatch.h deepep_time): `bytes`
  // is what this rank sends over NVLink, `rdma_bytes` what it sends to other nodes, and `sms` the
  // SMs the kernels run on (0: HybridEP, bound by the links). `flex` false: a NCCL collective.
  // `nvl_share` / `rdma_share`: the part of the copies DeepEP counts (one per destination rank or
  // node, the own one included) that crosses the link, (ep − 1)/ep, 1 − 1/g or (N − 1)/N.
  double rdma_bytes = 0;
  int32_t sms = 0;
  bool flex = false;
  float nvl_share = 1;
  float rdma_share = 1;
};

/// One kernel estimate: FLOPs with an op class and shape key, bytes with a bandwidth class.
struct Kernel {
  double flops = 0;
  double bytes = 0;
  const char* bw = "default";     // accelerator.bandwidth class
  PackedKey key;                  // efficiency shape key (empty = no lookup)
  // Memory-bound kernels this entry stands for: `launches` kernels of the same bandwidth class
  // moving `bytes` together, each paying the class's latency (the router's and the MoE
  // dispatcher's small kernels). 1 for every GEMM and for a single memory pass.
  uint32_t launches = 1;
  OpClass op = OpClass::Default;  // accelerator.op class (calibration/op_class.h)
};
static_assert(std::is_trivially_copyable_v<Kernel>, "kernels are built and copied on every estimate");

/// A phase's kernels and collectives: one or two (Permutation), more only for serial experts.
using KernelList = SmallVector<Kernel, 2>;
using CommList = SmallVector<CommCall, 2>;

enum class RecomputeStatus : uint8_t { None, First, Middle, Last };

/// A leaf op. Costs per phase are lists of kernels (Permutation runs two) plus collectives.
struct Leaf {
  // User-provided, not defaulted: a value-initialized leaf (emplace_back()) would otherwise be
  // zeroed whole, inline kernel storage included, before its members are initialized.
  Leaf() {}

  std::string_view name;  // static text (literals, or interned: core/intern.h); copies are free
  std::array<KernelList, 3> kernels;
  std::array<CommList, 3> comms;
  // Static memory.
  double params = 0;          // per-rank parameter count
  double weight_elem_bytes = 2;
  // Activations (bytes): saved for backward, forward transient, backward transient.
  double cache = 0, fpk = 0, bpk = 0;
  double offload_bytes = 0;        // saved bytes moved to host memory (activation offloading)
  double cache_inputs_cached = 0;  // cache when the input is kept by a neighbour (Megatron tails)
  double input_bytes = 0;          // checkpoint size when this leaf starts a recompute segment
  // TE dummy-wgrad buffer shape (rows·cols·elem bytes), 0 when not applicable.
  double dummy_wgrad_bytes = 0;
  int64_t dummy_rows = 0, dummy_cols = 0;
  // Ring attention (cp_comm_type p2p, a2a+p2p): the forward and input-gradient kernels run in
  // `ring_steps` equal blocks, each overlapped with the P2P exchange (over CP) of one KV block of
  // `ring_block_bytes` (model/context_parallel.h). 0 = no ring.
  int64_t ring_steps = 0;
  double ring_block_bytes = 0;
  // The flags last, side by side (no padding between the numbers).
  bool recompute_repeats_comm = false;  // Linear: recompute repeats the forward TP collective
  bool moe_params = false;              // parameters sharded over EDP instead of DP
  bool breakpoint = false;         // ends a recompute segment (the next recomputed leaf starts one)
  // Recompute role (set per layer instance).
  bool recompute = false;
  bool variance = false;            // last leaf of a segment: not recomputed, no recompute cost
  bool has_cached_inputs = false;
  RecomputeStatus status = RecomputeStatus::None;
  bool grouped = false;
  bool fp8_cast_transpose = false;  // TE's forward cast of the fp8 input also writes its transpose
  bool fp8_norm_fused = false;      // TE LayerNormLinear: the norm just before writes this input
  // The host's side (compute/host_cost.h): a TransformerEngine module call (else PyTorch eager
  // ops), and a sync point: the host waits for the device to finish every op before this one
  // (a device-to-host read such as the dropless MoE dispatcher's tokens per expert).
  bool te_module = false;
  bool host_sync = false;
};

/// One transformer layer's leaves; the recompute fields describe the layer when recomputed.
struct LayerTemplate {
  std::vector<Leaf> leaves;
  bool moe = false;
};

/// What a layer template depends on beyond the model, the strategy and the chunk environment
/// (never the layer's position): MoE or dense, recomputed, and whether it continues a
/// multi-layer recompute unit (its first leaf continues the unit's segment). `mtp_vocab` > 0: a
/// multi-token-prediction layer (its decoder layer between the MTP norms, projection, output
/// layer and loss) over that padded vocabulary.
struct LayerKind {
  bool moe = false, recompute = false, continues = false;
  int64_t mtp_vocab = 0;
  bool operator==(const LayerKind&) const = default;
};

/// One pipeline chunk: embedding (first), layers, and the head (last) in call order. Layer
/// templates are shared: chunks of one estimate (and of a search's cache) refer to the same ones.
struct Chunk {
  std::vector<Leaf> pre;             // embedding
  std::vector<Leaf> post;            // final norm, LM head, cross entropy
  std::vector<std::shared_ptr<const LayerTemplate>> templates;
  struct Layer {
    int template_index;
    bool recompute;
  };
  std::vector<Layer> layers;
};


/// Builds the leaves of one layer template.
[[nodiscard]] LayerTemplate build_layer(const ModelConfig& m, const Settings& s, LayerKind kind,
                                        const ChunkEnv& env = {});

/// The template of a layer kind, built with the chunk's model, strategy and environment.
using LayerSource = std::function<std::shared_ptr<const LayerTemplate>(LayerKind)>;

/// Builds the leaves of a chunk. `env.mode` selects Megatron's saved tensors (default) or the
/// peer's. Layer templates come from `layers` when given (shared), else are built for the chunk.
[[nodiscard]] Chunk build_chunk(const ModelConfig& m, const Settings& s, int64_t padded_vocab,
                                const ChunkSpec& spec, const ChunkEnv& env = {}, const LayerSource& layers = {});

}  // namespace trainsim
