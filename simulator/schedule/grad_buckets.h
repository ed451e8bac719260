// Megatron DDP gradient buckets of one model chunk and the point of the backward at which each
// bucket's last gradient is produced (where its reduce-scatter / all-reduce may start).
#pragma once

#include <cstdint>
#include <vector>

#include "core/small_vector.h"

namespace trainsim {

/// A piece of a chunk's backward, in backward order (head, last layer, …, first layer,
/// embedding): the parameters whose gradients it produces and its duration (seconds).
struct GradSegment {
  double params = 0;
  double seconds = 0;
};

/// A piece of a chunk's backward (head, one layer, embedding): gradients it produces (dense and
/// expert parameters) and its time in the whole backward and in the weight-gradient pass.
struct BackwardSegment {
  double dense = 0, moe = 0, bwd_s = 0, bwd_w_s = 0;
};

/// A chunk's backward in backward order (head, last layer … first layer, embedding): inline up
/// to 16 layers.
using BackwardSegments = SmallVector<BackwardSegment, 18>;


/// One bucket: its parameter count and the fraction (0–1) of the backward at whose point its
/// last gradient is ready.
struct GradBucket {
  double params = 0;
  double ready = 0;
};

/// Megatron's default bucket size (`--ddp-bucket-size` unset): max(40 M, 1 M·dp) parameters,
/// dp = the data-parallel group size (distributed_data_parallel.py).
[[nodiscard]] double default_bucket_params(int64_t dp);

/// Buckets of `bucket_params` parameters filled walking the parameters in backward order (as
/// Megatron's _ParamAndGradBuffer, which assigns parameters to buckets in reverse order); the
/// last bucket holds the remainder. Within a segment gradients are taken to appear at an even
/// rate. Empty when the segments hold no parameters. Ready points lie in [0, 1] whatever the
/// segments' times (1 when the backward takes no time).
[[nodiscard]] std::vector<GradBucket> grad_buckets(const std::vector<GradSegment>& backward_order,
                                                   double bucket_params);

}  // namespace trainsim
