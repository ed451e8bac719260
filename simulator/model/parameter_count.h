// Parameter counts of a model as published (unpadded vocabulary), in total, per token (active)
// and per pipeline stage: the first numbers users check against Hugging Face and Megatron-LM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inputs/model_config.h"
#include "plan/settings.h"

namespace trainsim {

/// Parameters held by one pipeline rank (all its virtual chunks), before TP/EP sharding.
struct StageParameters {
  int64_t stage = 0;
  int64_t layers = 0;  // transformer layers (MTP layers not included)
  int64_t total = 0;
  int64_t active = 0;
};

struct ParameterCount {
  int64_t total = 0;   // every parameter once (a tied output layer counted once)
  int64_t active = 0;  // used by one token: top-k routed experts instead of all of them
  int64_t embedding = 0;
  std::vector<StageParameters> stages;  // per pipeline rank; empty when the split is illegal
};

/// Counts the parameters of `m`, split over `stages` (pp·v virtual stages in stage order, stage i
/// on rank i mod pp, e.g. Plan::virtual_stages) the Megatron way (embedding on the first rank,
/// output layer on the last, a tied output layer then held by both ranks). No stages: totals only.
[[nodiscard]] ParameterCount count_parameters(const ModelConfig& m, const std::vector<VirtualStage>& stages,
                                              int64_t pp);

}  // namespace trainsim
