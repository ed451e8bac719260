// The small kernels of a MoE layer as Megatron core (0.13–0.16, transformer/moe/router.py,
// moe_utils.py, token_dispatcher.py) and TransformerEngine (2.x fused router and permute) run
// them: the router's score, top-k, loss and routing-map kernels, the dispatcher's token counts,
// the permutation's index building and the sort of received tokens by local expert. Each group
// is a number of memory-bound launches and the bytes they move together; the graph prices them
// on the system's `default` bandwidth class, each launch paying its latency (docs/cost-model.md
// §17.5).
#pragma once

#include <cstdint>

namespace trainsim {

/// `launches` memory-bound kernels moving `bytes` together.
struct KernelBatch {
  double bytes = 0;
  uint32_t launches = 0;
  void add(double b, uint32_t n = 1) {
    bytes += b;
    launches += n;
  }
};

/// Kernels of the forward and of the backward (input gradient).
struct FwdBwdKernels {
  KernelBatch fwd, bwd;
};

/// What the router of one rank runs per micro-batch.
struct RouterShape {
  double tokens = 0;        // T: rows the router scores
  double experts = 0;       // E
  double topk = 1;          // k
  double e = 2;             // bytes of a logit (the training dtype)
  bool sigmoid = false;     // --moe-router-score-function sigmoid (else softmax)
  bool fused = false;       // --moe-router-fusion: TE's fused top-k / score / aux-loss kernels
  bool groups = false;      // node-limited routing (--moe-router-num-groups)
  bool aux_loss = false;    // an auxiliary load-balancing loss is computed
  bool z_loss = false;      // --moe-z-loss-coeff
  bool capacity = false;    // a capacity factor: top-capacity tokens per expert kept
  bool pad = false;         // --moe-pad-expert-input-to-capacity
};

/// The router's kernels beyond its gating GEMM (forward; backward of the input gradient).
/// With X = T·E scores and K = T·k routed copies, unfused (moe_utils.topk_routing_with_score_function):
/// softmax: top-k of the logits (X·e + K·(e+8)) and a softmax of the k (2·K·e); sigmoid: the
/// fp32 cast, sigmoid and cast back (X·(2e+16)), top-k, the sum and the division of the k;
/// then the dense probs and routing map: zeros, scatter, zeros, int, scatter, bool
/// (X·(3e+9) + K·(2e+20), 6 launches). Node-limited routing: group top-k, sum, group top-k,
/// mask zeros and scatter, mask expand and masked_fill (7 launches, X·(3e+2)). A capacity:
/// top-capacity over the tokens, zeros, scatter, bool and the probs mask (5 launches, 6 without
/// padding: the logical and). The aux loss (switch_load_balancing_loss_func with
/// compute_routing_scores_for_aux_loss): the scores again, their top-k and routing map, tokens
/// per expert, probs per expert, the loss and its tracker (12 launches, X·(3e+22) + K·24). The
/// z-loss: logsumexp (4) and square, mean, scale (3), X·4e. Fused (TE fused_topk_with_score_function,
/// fused_compute_score_for_moe_aux_loss, fused_moe_aux_loss): one kernel for the routing
/// (X·(e+5)), three for the aux loss; the capacity and z-loss stay PyTorch's. The backward
/// mirrors each: about one launch per differentiable forward kernel that touches the scores.
[[nodiscard]] FwdBwdKernels router_kernels(const RouterShape& r);

/// The dispatcher's token counts before the dispatch (token_dispatcher.py preprocess):
/// routing_map.sum over tokens (X + E·8); without fixed capacities (dropless, or a capacity
/// without padding) also the splits and per-expert counts (4 launches) and their copies to the
/// host (3), E·8 bytes each. `fixed`: padded to capacity (torch.full, no count reaches the host).
[[nodiscard]] KernelBatch dispatch_count_kernels(double tokens, double experts, bool fixed);

/// Index building of a permutation over a rows × experts routing map (X = rows·experts) into
/// `out_rows` permuted rows. Fused (TE moe_permute with a mask map, TE 2.x make_row_id_map):
/// three passes over the map, X·21 bytes; the probs ride in the token kernel. Unfused dropless
/// (moe_utils.permute: masked_select of token indices and of probs): transpose, count, scan and
/// gather twice, X·(14 + 3e) + out·(8 + e) in 8 launches; unfused padded (argsort of the map):
/// transpose, 4-pass radix sort, index slice, probs transpose and gather, X·20 + out·(16 + e)
/// in 9 launches.
[[nodiscard]] KernelBatch permute_index_kernels(double rows, double experts, double out_rows, double e,
                                                bool fused, bool padded);

/// Rows TransformerEngine's Fp8Padding aligns each expert's rows to before a fp8 grouped GEMM
/// (transformer_engine/pytorch/module/fp8_padding.py: 16, 32 for MXFP8's 1×32 blocks).
[[nodiscard]] int64_t fp8_row_alignment(bool mxfp8);

}  // namespace trainsim
