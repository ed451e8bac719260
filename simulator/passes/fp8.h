// fp8 pass over a layer's leaves (TransformerEngine's quantized Linear path).
#pragma once

#include <vector>

#include "model/graph.h"

namespace trainsim {

/// Inserts, before every fp8 GEMM leaf, the Float8Quantizer leaf that casts its bf16 input to
/// fp8 (reads the input, writes the 1-byte copy).
void insert_quantizers(std::vector<Leaf>& leaves);

}  // namespace trainsim
