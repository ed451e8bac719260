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
// TE 2.8 csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl runs
// nvte_compute_amax_with_config (a pass reading the input), nvte_compute_scale_from_amax, then
// nvte_quantize_v2: 3 launches, the input read twice (`amax_fused`: the producing kernel computed
// the amax, quantize_with_amax: 2 launches, one read). The other recipes cast in one pass
// (delayed: the amax of this cast scales the next step's; blockwise and mxfp8: per-block scales
// inside the cast). A cast that writes both orientations writes them in the same pass
// (nvte_quantize_v2 with row- and column-wise outputs: the fused cast-transpose on Hopper).
Kernel quantize_kernel(Fp8Recipe recipe, double elems, double write, bool amax_fused = false) {
  Kernel k;
  const bool current = recipe == Fp8Recipe::Tensorwise;
  const bool amax_pass = current && !amax_fused;
  k.bytes = elems * (2 * (amax_pass ? 2 : 1) + write);
  k.launches = current ? (amax_pass ? 3 : 2) : 1;
  return k;
}

// TE's transpose of an fp8 tensor (tex.fp8_transpose; Float8TensorBase._create_transpose,
// Float8BlockwiseQTensorBase._transpose_columnwise_data): reads and writes 1 byte per element.
Kernel transpose_kernel(double elems) {
  Kernel k;
  k.bytes = 2 * elems;
  return k;
}

// Elements of the fp8 GEMM's first input in a leaf phase (b·m·k of a dense GEMM, key b, m, k, n:
// flops / (2n)); 0 for other kernels.
double fp8_gemm_input_elements(const KernelList& ks) {
  double in = 0;
  for (const Kernel& k : ks)
    if (op_row(k.op).fp8 && k.flops > 0 && k.key.kind == KeyKind::Matmul && k.key.num[3] > 0) in += k.flops / (2 * k.key.num[3]);
  return in;
}

// The size of the TP group the leaf all-gathers over in phase `p` (sequence parallelism: a
// column-parallel Linear's input in the forward, a row-parallel Linear's output gradient in the
// backward), 1 without one.
int64_t tp_gather(const Leaf& l, int p) {
  for (const CommCall& c : l.comms[p])
    if (c.kind == Collective::AllGather && c.group == Group::TP) return c.n;
  return 1;
}

bool per_tensor(Fp8Recipe r) { return r == Fp8Recipe::Delayed || r == Fp8Recipe::Tensorwise; }

// The forward cast of a Linear's input (default mode), `elems` bf16 elements of it. A
// LayerNormLinear (gemm.fp8_norm_fused: Megatron's TELayerNormColumnParallelLinear) hands its
// input quantizer to the norm (TE 2.8 module/layernorm_linear.py _LayerNormLinear.forward:
// with_quantized_norm whenever fp8), and csrc/extensions/normalization.cpp rmsnorm_fwd /
// layernorm_fwd picks by quantizer:
// - delayed (Float8Quantizer): FULLY_FUSED, the norm kernel writes fp8 itself: `norm` writes 1
//   byte per element instead of 2, no cast; the transpose Hopper needs (the norm kernel writes
//   one row-major output, rmsnorm_fwd_kernels.cuh) is a separate fp8 transpose;
// - tensorwise (Float8CurrentScalingQuantizer): FUSED_NORM_AMAX_FP8, the norm writes bf16 and
//   its amax (rmsnorm_fwd_kernels.cuh requires_amax), then quantize_with_amax: scale and cast;
// - blockwise, mxfp8: UNFUSED (mxfp8 fused only with NVTE_NORM_FWD_USE_CUDNN): norm, then cast.
KernelList forward_cast(const Leaf& gemm, Leaf* norm, Fp8Recipe recipe, double elems, double write) {
  if (!gemm.fp8_norm_fused || norm == nullptr || norm->kernels[kFwd].empty())
    return {quantize_kernel(recipe, elems, write)};
  if (recipe == Fp8Recipe::Delayed) {
    norm->kernels[kFwd][0].bytes -= norm->input_bytes / 2;  // its output in fp8, not bf16
    if (gemm.fp8_cast_transpose) return {transpose_kernel(elems)};
    return {};
  }
  return {quantize_kernel(recipe, elems, write, recipe == Fp8Recipe::Tensorwise)};
}

// The quantize of the GEMM's output gradient, `out` elements of it (TE 2.8 module/base.py
// grad_output_preprocess with both usages). A row-parallel Linear under sequence parallelism
// all-gathers the gradient (gather_grad_output), in fp8: distributed.py _all_gather_fp8 quantizes
// the local shard (out / tp elements) row-wise only, gathers, and on Hopper transposes the
// gathered tensor (needs_transpose → _create_transpose); _all_gather_fp8_blockwise and
// _all_gather_mxfp8 quantize the shard in both orientations, and blockwise on Hopper transposes
// the gathered column-wise data (_post_process_fp8_blockwise_gather). TE 1.x did the same (cast
// the shard, gather, fp8_transpose). The TP all-reduce of the amax that current scaling adds
// there (linear.py _customize_quantizers_float8_current_scaling: with_amax_reduction) is not
// counted.
KernelList grad_output_quantize(const Leaf& gemm, Fp8Recipe recipe, bool blackwell, double out) {
  const int64_t tp = tp_gather(gemm, kBwdAct);
  if (tp <= 1) return {quantize_kernel(recipe, out, fp8_cast_write_bytes(recipe, !blackwell))};
  KernelList ks = {quantize_kernel(recipe, out / static_cast<double>(tp), per_tensor(recipe) ? 1 : fp8_cast_write_bytes(recipe, false))};
  if (!blackwell && recipe != Fp8Recipe::Mxfp8) ks.push_back(transpose_kernel(out));
  return ks;
}

// The transpose of the saved input before the weight-gradient GEMM, on Hopper: a per-tensor
// recipe whose forward cast wrote no transpose (the input was all-gathered row-wise in fp8; TE
// 2.8 layernorm_linear.py / linear.py backward: update_usage(columnwise_usage=True) on the
// re-gathered input) and blockwise after the sequence-parallel re-gather (the column-wise data
// gathered compact, then transposed). Over the gathered input.
KernelList wgrad_input_transpose(const Leaf& gemm, Fp8Recipe recipe, bool blackwell) {
  if (blackwell) return {};
  const bool needs = per_tensor(recipe) ? !gemm.fp8_cast_transpose
                                        : recipe == Fp8Recipe::Blockwise && tp_gather(gemm, kFwd) > 1;
  const double in = needs ? fp8_gemm_input_elements(gemm.kernels[kFwd]) : 0;
  if (in <= 0) return {};
  return {transpose_kernel(in)};
}

}  // namespace

// TE's quantizer casting a Linear's input to fp8 before each quantized GEMM: reads the bf16
// input, writes the fp8 copies (the peer's Float8Quantizer leaf: one 1-byte copy, one pass). In
// the default mode (`grad_output`) the forward cast is TE's (forward_cast: fused into the norm of
// a LayerNormLinear), and the leaf's backward holds the quantize of the GEMM's output gradient
// that TE runs before the dgrad and wgrad GEMMs (grad_output_quantize: one copy on Blackwell, the
// copy and its transpose on Hopper for the per-tensor recipes, fp8_cast_write_bytes; both
// orientations with their scales under blockwise and mxfp8) and the transposes of the saved
// input for the wgrad GEMM (wgrad_input_transpose).
void insert_quantizers(std::vector<Leaf>& L, Fp8Recipe recipe, bool grad_output, bool blackwell) {
  for (size_t i = 0; i < L.size(); ++i) {
    const auto& k = L[i].kernels[kFwd];
    if (k.empty() || !op_row(k[0].op).fp8)
      continue;
    Leaf q;
    q.name = intern(std::string(L[i].name) + ".quantizer");
    const double in = L[i].input_bytes;
    const double write = fp8_cast_write_bytes(recipe, L[i].fp8_cast_transpose);
    if (grad_output) {
      q.kernels[kFwd] = forward_cast(L[i], i > 0 ? &L[i - 1] : nullptr, recipe, in / 2, write);
      const double out = fp8_gemm_output_elements(k);
      if (out > 0) q.kernels[kBwdAct] = grad_output_quantize(L[i], recipe, blackwell, out);
      q.kernels[kBwdW] = wgrad_input_transpose(L[i], recipe, blackwell);
    } else {
      Kernel cast;
      cast.bytes = in + in / 2 * write;  // the peer's cast: one pass
      q.kernels[kFwd] = {cast};
    }
    q.fpk = in + in / 2 * write;
    q.input_bytes = in;
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
