// Structure of a fused-attention kernel's time (docs/calibration.md, "Attention structure"),
// fitted per op (sdp_fwd, sdp_bwd) from the measured points of its measured-points model, so a
// held-out shape is predicted by the kernel's cost rather than by its nearest neighbours alone.
//
// FlashAttention-2/3 and cuDNN's fused attention tile the sequence: the forward launches one CTA
// per (batch, head, block of kAttentionTile query rows) (flash_fwd_launch_template.h: grid
// (ceil(seqlen_q / kBlockM), b, h)), the backward one per block of key rows (kBlockN, the grid of
// flash_bwd_launch_template.h), and each CTA loops over the blocks of the other side, under a
// causal mask only over those at or below the diagonal (n_block_max in flash_fwd_kernel.h).
// So with q = ceil(S / tile) blocks:
// - CTAs = B·H·q, each paying a fixed cost (load Q, softmax rescale, write O / dQ dK dV);
// - tile pairs = B·H·q(q+1)/2, each a QKᵀ and a PV product of tile² · (d_qk + d_v) FLOPs plus a
//   softmax whose cost does not grow with the head dim (FlashAttention-3's reason to overlap
//   the exponentials with the GEMMs);
// - P CTAs run at once (SMs × CTAs per SM, a property of the kernel): the fixed costs run in
//   ceil(CTAs / P) waves; the tile pairs take the longer of their share pairs / P and the
//   longest CTA, q pairs (few heads: the diagonal's last block bounds the kernel).
// Time, in the units of the FLOP convention (peak FLOP/s × seconds), is
//   t = c0 + c1·ceil(CTAs / P) + (c2 + c3·(d_qk + d_v)/256)·max(pairs / P, q),
// c0 a fixed cost (the launch, and what the measured shapes' range leaves to the intercept), c1 a
// wave of CTAs' fixed cost, c2 a round of P tile pairs' head-dim-independent cost, c3 its cost at
// d_qk + d_v = 256. The c ≥ 0 are least squares on the relative time error (every subset of
// the terms, the best non-negative one), P the best of the kAttentionParallel* steps. Rows are
// batch · max(heads, KV heads), as the FLOP convention counts them.
#pragma once

#include <cstddef>
#include <vector>

#include "calibration/shape_key.h"

namespace trainsim {

/// Query (forward) or key (backward) rows of a CTA: FlashAttention-2's kBlockM for head dim 128
/// on A100/H100, FlashAttention-3's and cuDNN's 128-row tiles.
inline constexpr double kAttentionTile = 128;
/// Candidate concurrent CTAs P: 2^(k/4) for k = 20 … 44 (32 … 2048), 4 steps per octave.
inline constexpr int kAttentionParallelFrom = 20, kAttentionParallelTo = 44, kAttentionParallelSteps = 4;
/// Terms c0 … c3 above.
inline constexpr int kAttentionTerms = 4;
/// Fewest points the structure is fitted from (twice its five parameters), and fewest distinct
/// sequence lengths among them (its terms differ only in how they grow with the sequence: at one
/// length, as SimuMax's A100-PCIe file's 12 shapes at 4096, P and the c trade off freely). With
/// fewer, the measured-points model answers from its nearest points alone.
inline constexpr size_t kAttentionStructurePoints = 10;
inline constexpr size_t kAttentionStructureSeqs = 3;

/// An attention key's dimensions (KeyKind::Sdpa fields).
struct AttentionShape {
  double batch = 0, seq = 0, heads = 0, kv_heads = 0, d_qk = 0, d_v = 0;
};
[[nodiscard]] AttentionShape attention_shape(const PackedKey& key);

/// The FLOP convention's forward count 2·B·S²·max(h, h_kv)·(d_qk + d_v) (shape_key.h).
[[nodiscard]] double attention_flops(const AttentionShape& s);

/// The four terms of the time above at P concurrent CTAs.
void attention_terms(const AttentionShape& s, double parallel, double out[kAttentionTerms]);

struct AttentionFit {
  double parallel = 0;               // P; 0: not fitted
  double c[kAttentionTerms] = {};    // c0 … c3, FLOP-convention units
  double rms = 0;                    // root mean square relative time error of the fit
  size_t points = 0;                 // points it was fitted from
  [[nodiscard]] bool fitted() const { return parallel > 0; }
  /// Time of `s` in FLOP-convention units (peak FLOP/s × seconds).
  [[nodiscard]] double time(const AttentionShape& s) const;
  /// log(attention_flops / time): the log efficiency the structure predicts.
  [[nodiscard]] double log_efficiency(const AttentionShape& s) const;
};

/// Fits the structure to shapes and their efficiencies (> 0). Not fitted (parallel 0) for fewer
/// than kAttentionStructurePoints points or kAttentionStructureSeqs sequence lengths, or when no
/// subset of terms fits with c ≥ 0.
[[nodiscard]] AttentionFit fit_attention(const std::vector<AttentionShape>& shapes, const std::vector<double>& eff);

}  // namespace trainsim
