// MoE layer kernel inventory (see moe_kernels.h for the kernels and their sources).
#include "model/moe_kernels.h"

namespace trainsim {

FwdBwdKernels router_kernels(const RouterShape& r) {
  const double X = r.tokens * r.experts, K = r.tokens * r.topk, T = r.tokens, e = r.e;
  FwdBwdKernels k;
  if (r.fused) {
    // TE fused_topk_with_score_function: logits in, dense probs (fp32) and map (bool) out.
    k.fwd.add(X * (e + 5));
    k.bwd.add(X * (e + 5));
  } else {
    if (r.sigmoid) {
      k.fwd.add(X * (2 * e + 16), 3);          // float(), sigmoid, type_as
      k.fwd.add(X * e + K * (e + 8));          // top-k
      k.fwd.add(3 * K * e + 2 * T * e, 2);     // sum of the k, division
      k.bwd.add(3 * K * e + 2 * T * e, 2);
      k.bwd.add(X * e + K * (e + 8), 2);       // top-k backward: zeros, scatter
      k.bwd.add(X * (2 * e + 16), 3);
    } else {
      k.fwd.add(X * e + K * (e + 8));          // top-k of the logits
      k.fwd.add(2 * K * e);                    // softmax of the k
      k.bwd.add(3 * K * e);                    // softmax backward
      k.bwd.add(X * e + K * (e + 8), 2);       // top-k backward: zeros, scatter
    }
    k.fwd.add(X * (3 * e + 9) + K * (2 * e + 20), 6);  // dense probs and routing map
    k.bwd.add(K * (2 * e + 8));                        // scatter backward: a gather
    if (r.groups) {
      k.fwd.add(X * (3 * e + 2), 7);
      k.bwd.add(X * (2 * e + 1));  // masked_fill backward
    }
  }
  if (r.capacity) {
    k.fwd.add(X * (4 * e + 2) + K * (e + 17) + (r.pad ? 0 : 3 * X), r.pad ? 5 : 6);
    k.bwd.add(X * (2 * e + 1));
  }
  if (r.aux_loss) {
    if (r.fused) {
      k.fwd.add(X * (e + 10), 5);
      k.bwd.add(X * (3 * e + 13), 3);
    } else {
      k.fwd.add(X * (3 * e + 22) + K * 24, 12);
      k.bwd.add(X * (2 * e + 20), 3);
    }
  }
  if (r.z_loss) {
    k.fwd.add(X * 4 * e, 7);
    k.bwd.add(X * 5 * e, 2);
  }
  return k;
}

KernelBatch dispatch_count_kernels(double tokens, double experts, bool fixed) {
  KernelBatch b;
  b.add(tokens * experts + experts * 8);
  if (!fixed) b.add(7 * experts * 8, 7);
  return b;
}

KernelBatch permute_index_kernels(double rows, double experts, double out_rows, double e, bool fused, bool padded) {
  const double X = rows * experts;
  KernelBatch b;
  if (fused) {
    b.add(X * 21, 3);
  } else if (padded) {
    b.add(X * 20 + out_rows * (16 + e), 9);
  } else {
    b.add(X * (14 + 3 * e) + out_rows * (8 + e), 8);
  }
  return b;
}

int64_t fp8_row_alignment(bool mxfp8) { return mxfp8 ? 32 : 16; }

}  // namespace trainsim
