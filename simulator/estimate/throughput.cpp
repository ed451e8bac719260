// Megatron-LM's FLOP count (megatron/training/training.py, num_floating_point_operations,
// core 0.12–0.17): 12 = 3 (fwd, wgrad, dgrad) · 2 (two GEMMs per block) · 2 (FLOPs per FMA).
#include "estimate/throughput.h"

#include "core/enum_table.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"

namespace trainsim {

namespace {
constexpr EnumTable<MfuConvention, 2> kMfuConventions(
    "convention", {{{MfuConvention::Megatron, "megatron"}, {MfuConvention::SimuMax, "simumax"}}});
}  // namespace

MfuConvention parse_mfu_convention(const std::string& text, const std::string& flag) {
  return kMfuConventions.parse<UsageError>(text, flag + ": ");
}

const char* mfu_convention_name(MfuConvention c) { return kMfuConventions.c_str(c); }

double megatron_step_flops(const ModelConfig& m, const Settings& s, int64_t padded_vocab,
                           int64_t global_batch) {
  const double h = static_cast<double>(m.hidden_size), seq = static_cast<double>(s.batch.seq_len);
  const double a = static_cast<double>(m.head_num);
  const double mtp = static_cast<double>(m.mtp_num_layers);
  // Layers: MTP layers count as the kind of the last layer (MoE for a MoE model).
  double moe_layers = static_cast<double>(m.moe_layers_in(0, m.layer_num));
  double dense_layers = static_cast<double>(m.layer_num) - moe_layers;
  (m.is_moe() ? moe_layers : dense_layers) += mtp;
  const double layers = dense_layers + moe_layers;
  const double glu = m.use_swiglu ? 1.5 : 1.0;
  const double expansion = 12;

  double attn;
  if (m.is_mla()) {
    const double dq = static_cast<double>(m.qk_head_dim.value_or(0));
    const double dr = static_cast<double>(m.qk_pos_emb_head_dim.value_or(0));
    const double dv = static_cast<double>(m.v_head_dim.value_or(0));
    const double kvl = static_cast<double>(m.kv_lora_rank.value_or(0));
    const double q_term = m.q_lora_rank
        ? static_cast<double>(*m.q_lora_rank) * (h + a * (dq + dr) + 1)
        : h * a * (dq + dr);
    attn = 6 * layers *
           (q_term + kvl * (h + a * (dq + dv) + 1) + h * dr + a * dv * h +
            seq * a * (dq + dr) / 2 + seq * a * dv / 2);  // causal: half the score matrix
  } else {
    const double d = static_cast<double>(m.head_size.value_or(0));
    const double g = static_cast<double>(m.kv_head_num);
    const double q_ratio = a * d / h;
    attn = expansion * layers * h * h * ((1 + g / a + seq / h / 2) * q_ratio);
  }
  const double ffn = m.intermediate_size ? static_cast<double>(*m.intermediate_size) : 0;
  const double moe_ffn = static_cast<double>(m.moe_ffn());
  const double shared = static_cast<double>(m.moe_shared_expert_intermediate_size.value_or(0));
  const double topk = m.is_moe() ? static_cast<double>(m.topk.value_or(0)) : 0;
  const double mlp = expansion * h *
                     (ffn * glu * dense_layers + (moe_ffn * topk * glu + shared * glu) * moe_layers);
  const double mtp_proj = 6 * mtp * (3 * h + 2 * h * h);
  const double logits = 6 * h * static_cast<double>(padded_vocab) * (mtp + 1);
  return static_cast<double>(global_batch) * seq * (mlp + attn + mtp_proj + logits);
}

Throughput megatron_throughput(const ModelConfig& m, const Settings& s, const SystemConfig& sys,
                               const Estimate& e) {
  Throughput t;
  if (!(e.iteration_time_s > 0)) return t;
  const double flops = megatron_step_flops(m, s, e.padded_vocab, e.global_batch_size);
  t.tflops_per_gpu = flops / e.iteration_time_s / static_cast<double>(s.par.world) / kTera;
  if (const double peak = mfu_peak_flops(sys); peak > 0) t.mfu = t.tflops_per_gpu * kTera / peak;
  return t;
}

double mfu_peak_flops(const SystemConfig& sys) {
  const ComputeOpConfig* def = sys.ops.known(op_index(OpClass::Default));
  return def && def->peak_flops > 0 ? def->peak_flops : 0;
}

}  // namespace trainsim
