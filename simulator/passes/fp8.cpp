#include "passes/fp8.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace trainsim {

// TE Float8Quantizer casting a Linear's input to fp8 before each quantized GEMM: reads the bf16
// input, writes the fp8 copy (the peer's Float8Quantizer leaf).
void insert_quantizers(std::vector<Leaf>& L) {
  for (size_t i = 0; i < L.size(); ++i) {
    const auto& k = L[i].kernels[kFwd];
    if (k.empty() || (std::string(k[0].op) != "fp8_matmul" && std::string(k[0].op) != "fp8_group_matmul")) continue;
    Leaf q;
    q.name = L[i].name + ".quantizer";
    const double in = L[i].input_bytes, out = L[i].input_bytes / 2;
    Kernel cast;
    cast.bytes = in + out;
    q.kernels[kFwd] = {cast};
    q.fpk = in + out;
    q.input_bytes = in;
    L.insert(L.begin() + static_cast<std::ptrdiff_t>(i), std::move(q));
    ++i;
  }
}

// Megatron keeps the bf16 parameter (the optimizer's fp32 main copy lives in the states) and TE
// quantises it once per step into copies it keeps across micro-batches. Megatron's TE wrappers
// pass is_first_microbatch (True on a step's first micro-batch, then False; None only with
// disable_parameter_transpose_cache: Megatron core 0.7 transformer/custom_layers/
// transformer_engine.py), and with it TE caches the quantised weight per module
// (TransformerEngine 1.9 module/base.py get_fp8_workspace, cache_name "weight": a persistent
// Float8Tensor refreshed on the first micro-batch; cast_transpose_ fills its transpose too).
// So the copies are held for the whole step, not per GEMM (transformer_engine/pytorch/tensor/*):
// - delayed, tensorwise (Float8Tensor, one fp32 scale per tensor): the fp8 row-wise copy, and on
//   Hopper its transpose for the dgrad GEMM (Hopper runs fp8 GEMMs only in the TN layout;
//   Blackwell runs any layout from the one copy);
// - blockwise (Float8BlockwiseQTensor, 128×128 blocks): row- and column-wise copies, one fp32
//   scale per 128·128 elements each;
// - mxfp8 (MXFP8Tensor, Blackwell): row- and column-wise copies, one E8M0 (1-byte) scale per 32
//   elements each.
// With fp8_param_gather (TE's fp8_model_init: the parameter is the Float8Tensor) there is no bf16
// copy; the fp8 data and, on Hopper, its cached transpose remain. The delayed recipe's scaling
// state (fp8_meta: scale, scale_inv and an amax history of amax_history_len × 5 fp32 values per
// GEMM, 20 KiB at NeMo's 1024) is a few MiB per model and not counted.
double fp8_weight_bytes(const std::string& recipe, bool param_gather, bool blackwell) {
  const double param = param_gather ? 0 : 2;
  if (recipe == "blockwise") return param + 2 * (1 + 4.0 / (128 * 128));
  if (recipe == "mxfp8") return param + 2 * (1 + 1.0 / 32);
  return param + (blackwell ? 1 : 2);
}

double param_gather_bytes(const StrategyConfig& s) { return s.fp8 && s.fp8_param_gather ? 1 : 2; }

bool is_blackwell_system(const std::string& sys_name) {
  std::string n = sys_name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const char* tag : {"b200", "b300", "blackwell"})
    if (n.find(tag) != std::string::npos) return true;
  return false;
}

}  // namespace trainsim
