// Throughput in the conventions users compare with: Megatron-LM's logged TFLOP/s per GPU and the
// SimuMax count the estimate uses (full S² attention).
#pragma once

#include <string>

#include "inputs/model_config.h"
#include "plan/settings.h"
#include "system/system_config.h"
#include "estimate/estimate.h"

namespace trainsim {

enum class MfuConvention { Megatron, SimuMax };

/// "megatron" or "simumax"; throws UsageError naming `flag` otherwise.
[[nodiscard]] MfuConvention parse_mfu_convention(const std::string& text, const std::string& flag);
[[nodiscard]] const char* mfu_convention_name(MfuConvention c);

/// Model FLOPs of one training step (forward + backward) of `global_batch` sequences, as
/// Megatron-LM's `num_floating_point_operations` counts them: causal self-attention at half,
/// the logits over the padded vocabulary, MTP layers when the model has them.
[[nodiscard]] double megatron_step_flops(const ModelConfig& m, const Settings& s,
                                         int64_t padded_vocab, int64_t global_batch);

struct Throughput {
  double tflops_per_gpu = 0;  // 10^12 FLOP/s per GPU
  double mfu = 0;             // of the system's default op peak
};

/// Megatron-convention throughput of an estimate.
/// The peak MFU is measured against: the system's `default` op class (the bf16 dense peak of the
/// presets, fp8 runs included, as Megatron-LM users quote it), FLOP/s; 0 when it has none.
[[nodiscard]] double mfu_peak_flops(const SystemConfig& sys);

[[nodiscard]] Throughput megatron_throughput(const ModelConfig& m, const Settings& s,
                                             const SystemConfig& sys, const Estimate& e);

}  // namespace trainsim
