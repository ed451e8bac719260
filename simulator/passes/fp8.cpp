#include "passes/fp8.h"

#include <string>

namespace trainsim {

// TE Float8Quantizer casting a Linear's input to fp8 before each quantized GEMM: reads the bf16
// input, writes the fp8 copy (the peer's Float8Quantizer leaf).
void insert_quantizers(std::vector<Leaf>& L) {
  for (size_t i = 0; i < L.size(); ++i) {
    const auto& k = L[i].kernels[kFwd];
    if (k.empty() || (std::string(k[0].op) != "fp8_matmul" && std::string(k[0].op) != "fp8_group_matmul")) continue;
    Leaf q;
    q.name = L[i].name + ".quantizer";
    const double in = L[i].input_bytes, out = L[i].input_bytes / 2;
    Kernel cast;
    cast.bytes = in + out;
    q.kernels[kFwd] = {cast};
    q.fpk = in + out;
    q.input_bytes = in;
    L.insert(L.begin() + static_cast<std::ptrdiff_t>(i), std::move(q));
    ++i;
  }
}

}  // namespace trainsim
