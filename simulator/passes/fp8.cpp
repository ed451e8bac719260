#include "passes/fp8.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "core/intern.h"

namespace trainsim {

namespace {

// Elements of the fp8 GEMM outputs of a leaf phase: flops / (2k) of each (b·m·n of a dense GEMM,
// key b, m, k, n; ng·M·N of a grouped one, key ng, M, N, K). 0 for a kernel without a key.
double fp8_gemm_output_elements(const KernelList& ks) {
  double out = 0;
  for (const Kernel& k : ks) {
    if (!op_row(k.op).fp8 || k.flops == 0) continue;
    const double depth = k.key.kind == KeyKind::Matmul ? k.key.num[2] : k.key.kind == KeyKind::Grouped ? k.key.num[3] : 0;
    if (depth > 0) out += k.flops / (2 * depth);
  }
  return out;
}

// One TE quantize of `elems` bf16 elements writing `write` bytes each. Current scaling
// (`tensorwise`, Float8CurrentScalingQuantizer) needs the tensor's amax before it can scale:
// TE 2.x runs nvte_compute_amax (a pass reading the input), the scale from it, then the cast:
// 3 launches, the input read twice. The other recipes cast in one pass (delayed: the amax of
// this cast scales the next step's; blockwise and mxfp8: per-block scales inside the cast).
Kernel quantize_kernel(Fp8Recipe recipe, double elems, double write) {
  Kernel k;
  const bool current = recipe == Fp8Recipe::Tensorwise;
  k.bytes = elems * (2 * (current ? 2 : 1) + write);
  k.launches = current ? 3 : 1;
  return k;
}

}  // namespace

// TE's quantizer casting a Linear's input to fp8 before each quantized GEMM: reads the bf16
// input, writes the fp8 copies (the peer's Float8Quantizer leaf: one 1-byte copy). With
// `grad_output` (default mode) its backward is the quantize of the GEMM's output gradient that
// TE's backward runs before the dgrad and wgrad GEMMs (TE 2.x module/base.py
// grad_output_preprocess: the quantizer with row-wise and column-wise usage): per element of
// the GEMM's output it reads the bf16 gradient and writes one fp8 copy on Blackwell, the copy
// and its transpose on Hopper (per-tensor recipes; fp8_cast_write_bytes), both orientations with
// their scales under blockwise and mxfp8.
void insert_quantizers(std::vector<Leaf>& L, Fp8Recipe recipe, bool grad_output, bool blackwell) {
  for (size_t i = 0; i < L.size(); ++i) {
    const auto& k = L[i].kernels[kFwd];
    if (k.empty() || !op_row(k[0].op).fp8)
      continue;
    Leaf q;
    q.name = intern(std::string(L[i].name) + ".quantizer");
    const double in = L[i].input_bytes;
    const double write = fp8_cast_write_bytes(recipe, L[i].fp8_cast_transpose);
    Kernel cast = grad_output ? quantize_kernel(recipe, in / 2, write) : Kernel{};
    if (!grad_output) cast.bytes = in + in / 2 * write;  // the peer's cast: one pass
    q.kernels[kFwd] = {cast};
    q.fpk = in + in / 2 * write;
    q.input_bytes = in;
    if (grad_output) {
      const double out = fp8_gemm_output_elements(k);
      if (out > 0) q.kernels[kBwdAct] = {quantize_kernel(recipe, out, fp8_cast_write_bytes(recipe, !blackwell))};
    }
    L.insert(L.begin() + static_cast<std::ptrdiff_t>(i), std::move(q));
    ++i;
  }
}

// What a TE Linear's forward does with its input (TransformerEngine 2.8 pytorch/module/linear.py
// _Linear.forward; layernorm_linear.py and grouped_linear.py likewise): it asks the input
// quantizer for row-wise data (the forward GEMM) and, when the weight needs a gradient, column-wise
// data (the wgrad GEMM) in the same cast; after the GEMM it drops the row-wise data ("Discard
// row-wise data since it is not needed in backward pass": update_usage(rowwise_usage=False)) and
// saves the column-wise data only.
// What one copy is (pytorch/tensor/*):
// - delayed, tensorwise (Float8Tensor, one fp32 scale per tensor): on Hopper the column-wise data
//   is the fp8 transpose, written by the forward's fused cast-transpose
//   (_internal/float8_tensor_base.py update_usage); on Blackwell the one row-wise copy serves both.
//   A column-parallel Linear under SP saves its row-wise shard instead and transposes after the
//   backward all-gather (supports_only_rowwise_all_gather). 1 byte per element either way;
// - blockwise (Float8BlockwiseQTensor, activations in 1×128 blocks: recipe x_block_scaling_dim 1):
//   the column-wise copy and one fp32 scale per 128 elements (get_scale_shape): 1 + 4/128;
// - mxfp8 (MXFP8Tensor): the column-wise copy and one E8M0 byte per 32 elements (make_empty;
//   padding to 128 × 4 scale tiles ignored): 1 + 1/32.
// The cast writes both orientations for blockwise and mxfp8 (row-wise for the forward GEMM,
// column-wise to save). The per-tensor recipes write one copy, and on Hopper also its transpose
// where the leaf says so (model/ops_basic.cpp fp8_cast_transpose; never in compat mode, the peer's
// cast writes one copy).
double fp8_saved_input_bytes(Fp8Recipe recipe) {
  if (recipe == Fp8Recipe::Blockwise) return 1 + 4.0 / 128;
  if (recipe == Fp8Recipe::Mxfp8) return 1 + 1.0 / 32;
  return 1;
}

double fp8_cast_write_bytes(Fp8Recipe recipe, bool transpose) {
  if (recipe == Fp8Recipe::Blockwise || recipe == Fp8Recipe::Mxfp8) return 2 * fp8_saved_input_bytes(recipe);
  return transpose ? 2 : 1;
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
double fp8_weight_bytes(Fp8Recipe recipe, bool param_gather, bool blackwell) {
  const double param = param_gather ? 0 : 2;
  if (recipe == Fp8Recipe::Blockwise) return param + 2 * (1 + 4.0 / (128 * 128));
  if (recipe == Fp8Recipe::Mxfp8) return param + 2 * (1 + 1.0 / 32);
  return param + (blackwell ? 1 : 2);
}

double param_gather_bytes(const Settings& s) {
  if (s.prec.fp8 && s.prec.fp8_param_gather) return 1;
  return s.prec.element_bytes();  // the parameters in the training dtype
}

bool is_blackwell_system(const std::string& sys_name) {
  // Case-insensitive search in place: every plan asks, so no lowercase copy.
  const auto same = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  for (std::string_view tag : {"b200", "b300", "blackwell"})
    if (std::search(sys_name.begin(), sys_name.end(), tag.begin(), tag.end(), same) != sys_name.end()) return true;
  return false;
}

}  // namespace trainsim
