// The shape keys a plan looks up: every GEMM / grouped GEMM / attention kernel of every stage.
#include "estimate/shapes.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "compute/cost.h"
#include "model/graph.h"
#include "plan/plan.h"

namespace trainsim {

std::vector<ShapeUse> list_shapes(const Plan& plan) {
  const ModelConfig& m = *plan.model;
  const SystemConfig& sys = *plan.system;
  std::vector<ChunkSpec> specs;
  for (const auto& rank : plan.chunks)
    for (const auto& spec : rank)
      if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
  std::vector<Chunk> chunks;
  for (const auto& spec : specs) chunks.push_back(build_chunk(m, plan, plan.padded_vocab, spec, plan.chunk_env));
  std::vector<ShapeUse> out;
  std::vector<std::pair<OpClass, PackedKey>> keys;  // out[i]'s op and key
  auto add_leaf = [&](const Leaf& l, int64_t count) {
    for (const auto& phase : l.kernels)
      for (const auto& k : phase) {
        if (k.key.empty()) continue;
        auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& u) { return u.first == k.op && u.second == k.key; });
        if (it != keys.end()) {
          out[static_cast<size_t>(it - keys.begin())].count += count;
          continue;
        }
        keys.emplace_back(k.op, k.key);
        ShapeUse u;
        u.op = op_name(k.op);
        u.key = format_packed_key(k.key);
        u.flops = k.flops;
        const ComputeOpConfig* op = sys.ops.known(op_index(k.op));
        u.in_system = op && efficiency_source_of(*op, k.key) != EfficiencySource::Default;
        u.count = count;
        out.push_back(u);
      }
  };
  for (const auto& c : chunks) {
    for (const auto& l : c.pre) add_leaf(l, 1);
    for (size_t t = 0; t < c.templates.size(); ++t) {
      const int64_t n = std::count_if(c.layers.begin(), c.layers.end(),
                                      [&](const Chunk::Layer& L) { return L.template_index == static_cast<int>(t); });
      for (const auto& l : c.templates[t]->leaves) add_leaf(l, n);
    }
    for (const auto& l : c.post) add_leaf(l, 1);
  }
  return out;
}

}  // namespace trainsim
