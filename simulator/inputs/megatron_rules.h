// The rule table of the Megatron-LM command-line reader (inputs/megatron_args.cpp): what each
// flag does to the model and strategy keys.
#pragma once
#include <string>
#include <vector>

namespace trainsim {

enum class MegatronUse { Model, Strategy, Special, NotModeled, Ignored };

struct MegatronRule {
  const char* flag;  // primary option, or "--option=value" for one value of it
  MegatronUse use;
  const char* text;  // Model/Strategy: JSON object template; NotModeled: what is not modeled
};

/// The rule of `flag` given `values`: a "--flag=value" row for a single value first, then the
/// flag's own row; nullptr when the table has none (the flag is ignored).
[[nodiscard]] const MegatronRule* find_megatron_rule(const std::string& flag, const std::vector<std::string>& values);

}  // namespace trainsim
