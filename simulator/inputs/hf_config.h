// Hugging Face `config.json` → ModelConfig, for the architectures people train with Megatron-LM.
#pragma once

#include <string>
#include <vector>

#include "inputs/model_config.h"

namespace trainsim {

struct HfOptions {
  bool mtp = false;  // keep DeepSeek-V3's num_nextn_predict_layers as MTP layers
};

struct HfModel {
  ModelConfig model;
  std::vector<std::string> notes;  // what the simulator approximates (e.g. sliding windows)
};

/// Architectures (`model_type`) the reader knows.
[[nodiscard]] const std::vector<std::string>& hf_model_types();

/// Reads a config.json document. An unknown model_type, an unknown key, or a value that changes
/// the math in a way trainsim does not model is a ConfigError naming the key; keys that cannot
/// change the prediction (token ids, dtype, rope parameters, ...) are ignored.
[[nodiscard]] HfModel load_hf_config(const std::string& text, const std::string& source,
                                     const HfOptions& options = {});

/// `arg` itself, or `arg`/config.json when `arg` is a directory.
[[nodiscard]] std::string hf_config_path(const std::string& arg);

}  // namespace trainsim
