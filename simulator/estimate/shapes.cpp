// The shape keys a plan looks up: every GEMM / grouped GEMM / attention kernel of every stage.
#include "estimate/shapes.h"

#include <algorithm>

#include "config/validate.h"
#include "model/graph.h"

namespace trainsim {

std::vector<ShapeUse> list_shapes(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys) {
  check_plan(m, s, sys, PlanSources{});
  StageLayers split;
  std::string why;
  if (!split_layers(m.layer_num, s, split, &why)) throw ConfigError("strategy", "/pp_size", why);
  const int64_t vocab = padded_vocab_size(m.vocab_size, s.tp_size);
  const int64_t dense = m.is_moe() ? m.dense_layers : 0;
  const int64_t v = s.interleaving_size, pp = s.pp_size;
  auto rc = [&](int64_t layers) { return s.is_recompute() ? std::min(layers, s.recompute_layer_num) : 0; };
  std::vector<Chunk> chunks;
  if (v > 1) {
    const int64_t per = m.layer_num / (pp * v);
    chunks.push_back(build_chunk(m, s, vocab, true, false, per, std::min(dense, per), rc(per)));
    chunks.push_back(build_chunk(m, s, vocab, false, false, per, 0, rc(per)));
    chunks.push_back(build_chunk(m, s, vocab, false, true, per, 0, rc(per)));
  } else if (pp == 1) {
    chunks.push_back(build_chunk(m, s, vocab, true, true, m.layer_num, dense, rc(m.layer_num)));
  } else {
    chunks.push_back(build_chunk(m, s, vocab, true, false, split.first, std::min(dense, split.first), rc(split.first)));
    if (pp > 2) chunks.push_back(build_chunk(m, s, vocab, false, false, split.middle, 0, rc(split.middle)));
    chunks.push_back(build_chunk(m, s, vocab, false, true, split.last, 0, rc(split.last)));
  }
  std::vector<ShapeUse> out;
  auto add_leaf = [&](const Leaf& l, int64_t count) {
    for (const auto& phase : l.kernels)
      for (const auto& k : phase) {
        if (k.key.empty()) continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const ShapeUse& u) { return u.op == k.op && u.key == k.key; });
        if (it != out.end()) {
          it->count += count;
          continue;
        }
        ShapeUse u;
        u.op = k.op;
        u.key = k.key;
        u.flops = k.flops;
        auto op = sys.ops.find(k.op);
        u.in_system = op != sys.ops.end() && op->second.accurate.count(k.key) > 0;
        u.count = count;
        out.push_back(u);
      }
  };
  for (const auto& c : chunks) {
    for (const auto& l : c.pre) add_leaf(l, 1);
    for (size_t t = 0; t < c.templates.size(); ++t) {
      const int64_t n = std::count_if(c.layers.begin(), c.layers.end(),
                                      [&](const Chunk::Layer& L) { return L.template_index == static_cast<int>(t); });
      for (const auto& l : c.templates[t].leaves) add_leaf(l, n);
    }
    for (const auto& l : c.post) add_leaf(l, 1);
  }
  return out;
}

}  // namespace trainsim
