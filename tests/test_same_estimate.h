// Exact equality of two estimates, field by field (figures, stage memory and times, per-rank ops
// when events were recorded, efficiency misses and hits): for paths that must change no figure
// (the estimate cache, shared layer templates).
#pragma once

#include <gtest/gtest.h>

#include "estimate/estimate.h"

namespace trainsim::test {

inline void expect_same(const OpCost& a, const OpCost& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.fwd_s, b.fwd_s);
  EXPECT_EQ(a.bwd_s, b.bwd_s);
  EXPECT_EQ(a.recompute_s, b.recompute_s);
  EXPECT_EQ(a.fwd_comm_s, b.fwd_comm_s);
  EXPECT_EQ(a.bwd_comm_s, b.bwd_comm_s);
  EXPECT_EQ(a.bwd_weight_s, b.bwd_weight_s);
  EXPECT_EQ(a.comm_by_group_s, b.comm_by_group_s);
  EXPECT_EQ(a.hidden_comm_by_group_s, b.hidden_comm_by_group_s);
  EXPECT_EQ(a.fwd_flops + a.bwd_flops + a.recompute_flops, b.fwd_flops + b.bwd_flops + b.recompute_flops);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.efficiency, b.efficiency);
}

inline void expect_same(const Estimate& a, const Estimate& b) {
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);
  EXPECT_EQ(a.pipeline_s, b.pipeline_s);
  EXPECT_EQ(a.mfu, b.mfu);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(a.stages[i].model_bytes, b.stages[i].model_bytes);
    EXPECT_EQ(a.stages[i].activation_cache_per_mb_bytes, b.stages[i].activation_cache_per_mb_bytes);
    EXPECT_EQ(a.stages[i].peak_activation_bytes, b.stages[i].peak_activation_bytes);
    EXPECT_EQ(a.stages[i].peak_alloc_bytes, b.stages[i].peak_alloc_bytes);
    EXPECT_EQ(a.stages[i].peak_phase, b.stages[i].peak_phase);
  }
  ASSERT_EQ(a.stage_times.size(), b.stage_times.size());
  for (size_t i = 0; i < a.stage_times.size(); ++i) {
    EXPECT_EQ(a.stage_times[i].fwd_compute_s, b.stage_times[i].fwd_compute_s);
    EXPECT_EQ(a.stage_times[i].bwd_compute_s, b.stage_times[i].bwd_compute_s);
    EXPECT_EQ(a.stage_times[i].recompute_s, b.stage_times[i].recompute_s);
    EXPECT_EQ(a.stage_times[i].tp_comm_s, b.stage_times[i].tp_comm_s);
    EXPECT_EQ(a.stage_times[i].dp_comm_s, b.stage_times[i].dp_comm_s);
    EXPECT_EQ(a.stage_times[i].comm_by_group_s, b.stage_times[i].comm_by_group_s);
    EXPECT_EQ(a.stage_times[i].hidden_comm_by_group_s, b.stage_times[i].hidden_comm_by_group_s);
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].model_bytes, b.ranks[r].model_bytes);
    EXPECT_EQ(a.ranks[r].chunk_cache_bytes, b.ranks[r].chunk_cache_bytes);
    EXPECT_EQ(a.ranks[r].chunk_peak_bytes, b.ranks[r].chunk_peak_bytes);
    ASSERT_EQ(a.ranks[r].chunks.size(), b.ranks[r].chunks.size());
    for (size_t c = 0; c < a.ranks[r].chunks.size(); ++c) {
      ASSERT_EQ(a.ranks[r].chunks[c].size(), b.ranks[r].chunks[c].size());
      for (size_t i = 0; i < a.ranks[r].chunks[c].size(); ++i) expect_same(a.ranks[r].chunks[c][i], b.ranks[r].chunks[c][i]);
    }
  }
  ASSERT_EQ(a.misses.size(), b.misses.size());
  for (size_t i = 0; i < a.misses.size(); ++i) {
    EXPECT_EQ(a.misses[i].key, b.misses[i].key);
    EXPECT_EQ(a.misses[i].flops, b.misses[i].flops);
  }
  EXPECT_EQ(a.efficiency_hits, b.efficiency_hits);
}

}  // namespace trainsim::test
