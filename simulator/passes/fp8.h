// fp8 pass over a layer's leaves (TransformerEngine's quantized Linear path).
#pragma once

#include <string>
#include <vector>

#include "plan/settings.h"
#include "model/graph.h"

namespace trainsim {

/// Inserts, before every fp8 GEMM leaf, the quantizer leaf that casts its bf16 input to fp8 under
/// `recipe` (reads the input, writes what fp8_cast_write_bytes says). `grad_output` (default
/// mode): the work TransformerEngine 2.x runs: the current-scaling amax pass (`tensorwise`), the
/// cast fused into the norm of a LayerNormLinear (Leaf::fp8_norm_fused: that norm leaf, just
/// before the GEMM, writes fp8 under delayed scaling), and in the backward the quantize of the
/// GEMM's output gradient (on the local shard before a sequence-parallel all-gather) and the
/// fp8 transposes Hopper needs for the wgrad GEMM (`blackwell`: none).
void insert_quantizers(std::vector<Leaf>& leaves, Fp8Recipe recipe, bool grad_output = false, bool blackwell = false);

/// Bytes the forward cast of a Linear input writes per element under `recipe`: the fp8 copies
/// and their scales; `transpose`: a per-tensor recipe's cast also writes the transpose (Hopper).
[[nodiscard]] double fp8_cast_write_bytes(Fp8Recipe recipe, bool transpose);

/// Bytes a fp8 Linear saves for its weight-gradient GEMM per element of its input under
/// `recipe`: one 1-byte copy plus its scales.
[[nodiscard]] double fp8_saved_input_bytes(Fp8Recipe recipe);

/// Bytes per parameter a Linear weight keeps on the GPU under fp8 in Megatron with
/// TransformerEngine: the bf16 parameter (none with fp8_param_gather) plus TE's quantised copies
/// of the weight and their scales for `recipe` (delayed | tensorwise | blockwise | mxfp8).
[[nodiscard]] double fp8_weight_bytes(Fp8Recipe recipe, bool param_gather, bool blackwell);

/// Bytes per parameter the distributed optimizer's parameter all-gather moves: 1 with fp8 and
/// fp8_param_gather, else 2 (bf16).
[[nodiscard]] double param_gather_bytes(const Settings& s);

/// Whether a system name names a Blackwell GPU (B200, GB200, B300, GB300).
[[nodiscard]] bool is_blackwell_system(const std::string& sys_name);

}  // namespace trainsim
