// Shape listing (filled by the op graph).
#include "estimate/shapes.h"

namespace trainsim {

std::vector<ShapeUse> list_shapes(const ModelConfig&, const StrategyConfig&, const SystemConfig&) {
  return {};
}

}  // namespace trainsim
