// Loading embedded presets in tests.
#pragma once

#include "inputs/model_config.h"
#include "system/presets.h"
#include "system/system_config.h"

namespace trainsim::test {

inline ModelConfig preset_model(const char* name) {
  const ConfigText t = resolve_config("model", name);
  return load_model(t.text, t.source);
}

inline SystemConfig preset_system(const char* name) {
  const ConfigText t = resolve_config("system", name);
  return load_system(t.text, t.source);
}

}  // namespace trainsim::test
