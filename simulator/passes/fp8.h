// fp8 pass over a layer's leaves (TransformerEngine's quantized Linear path).
#pragma once

#include <string>
#include <vector>

#include "config/strategy_config.h"
#include "model/graph.h"

namespace trainsim {

/// Inserts, before every fp8 GEMM leaf, the Float8Quantizer leaf that casts its bf16 input to
/// fp8 (reads the input, writes the 1-byte copy).
void insert_quantizers(std::vector<Leaf>& leaves);

/// Bytes per parameter a Linear weight keeps on the GPU under fp8 in Megatron with
/// TransformerEngine: the bf16 parameter (none with fp8_param_gather) plus TE's quantised copies
/// of the weight and their scales for `recipe` (delayed | tensorwise | blockwise | mxfp8).
[[nodiscard]] double fp8_weight_bytes(const std::string& recipe, bool param_gather, bool blackwell);

/// Bytes per parameter the distributed optimizer's parameter all-gather moves: 1 with fp8 and
/// fp8_param_gather, else 2 (bf16).
[[nodiscard]] double param_gather_bytes(const StrategyConfig& s);

/// Whether a system name names a Blackwell GPU (B200, GB200, B300, GB300).
[[nodiscard]] bool is_blackwell_system(const std::string& sys_name);

}  // namespace trainsim
