// Megatron's split of the model over the pipeline: pp·v virtual stages, each holding the
// embedding, decoder layers, MTP layers and the output layer + loss, from a layout string
// (`pipeline_model_parallel_layout`) or from the uneven-stage flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "plan/settings.h"

namespace trainsim {

/// Parses a layout string (Megatron `--pipeline-model-parallel-layout`): `|` separates stages,
/// `E` embedding, `t` decoder layer, `m` MTP layer, `L` output layer + loss, `X*N` repeats the
/// letter, `|` or parenthesised group X N times, `,` and blanks separate only. Returns false with
/// a reason on a syntax error, when the layout expands beyond 2^20 letters or nests groups deeper
/// than 64.
[[nodiscard]] bool parse_pipeline_layout(const std::string& text, std::vector<VirtualStage>& out,
                                         std::string* reason);

/// Virtual stages per pipeline rank the strategy asks for: the layout's stages / pp_size,
/// (layer_num / pp_size) / num_layers_per_virtual_pipeline_stage, or interleaving_size.
/// Returns 1 for inputs pipeline_stages rejects.
[[nodiscard]] int64_t virtual_stages_per_rank(const ModelConfig& m, const StrategyConfig& s);

/// The pp·v virtual stages of the default mode, in stage order (Megatron
/// `get_num_layers_to_build`, or the layout). Returns false with the strategy key at fault
/// (a JSON pointer) and a reason when the split is illegal.
[[nodiscard]] bool pipeline_stages(const ModelConfig& m, const StrategyConfig& s,
                                   std::vector<VirtualStage>& out, std::string* path,
                                   std::string* reason);

}  // namespace trainsim
