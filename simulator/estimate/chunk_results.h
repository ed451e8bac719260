// Chunk results of one estimate: each distinct chunk spec evaluated once, through the
// EstimateCache when given (keyed by content). Internal to estimate/.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "estimate/chunk_cost.h"
#include "plan/plan.h"

namespace trainsim {

struct EstimateCache::Impl {
  std::optional<ModelConfig> model;  // compared by content on every call
  uint64_t system_hash = 0;
  std::unordered_map<std::string, detail::ChunkResult> chunks;
  detail::LayerMap layers;  // the templates the chunks refer to
  int64_t hits = 0, misses = 0;
};


namespace detail {

// Chunk results of one estimate: each distinct spec evaluated once, through the cache when given.
class ChunkResults {
 public:
  ChunkResults(const Env& env, const Plan& plan, EstimateCache* cache)
      : env_(env),
        plan_(plan),
        cache_(cache),
        chunk_env_{plan.chunk_env},
        store_(env, chunk_env_, cache ? &cache->impl().layers : nullptr, base_key_) {
    if (!cache_) return;
    EstimateCache::Impl& c = cache_->impl();
    const uint64_t sh = content_hash(env.sys);
    if (!c.model || !(*c.model == env.m) || c.system_hash != sh) {
      c.chunks.clear();
      c.layers.layers.clear();
      c.model = env.m;
      c.system_hash = sh;
    }
    TRAINSIM_ASSERT(plan.chunk_key != 0, "a plan estimated through an EstimateCache needs key_chunks");
    const uint64_t strategy = plan.chunk_key;
    base_key_.append(reinterpret_cast<const char*>(&strategy), sizeof strategy);
    base_key_ += mode_name(plan.mode);
    // Leaves communicate over these groups only (a test checks every preset's leaves).
    for (Group g : kChunkGroups) {
      base_key_ += plan.nets.of(g);
      base_key_ += '\0';
    }
  }

  ChunkResults(const ChunkResults&) = delete;
  ChunkResults& operator=(const ChunkResults&) = delete;
  ~ChunkResults() {
    for (size_t i = 0; i < inline_used_; ++i) inline_[i].r.~ChunkResult();
  }

  /// The result of `spec`: evaluated once per estimate, through the cache when given.
  const ChunkResult& get(const ChunkSpec& spec);

 private:
  // A fresh result of an estimate without a cache, where it stays (the estimate holds pointers to
  // it): inline for the first few, which most plans need at most.
  ChunkResult& local() {
    if (inline_used_ < std::size(inline_)) return *::new (&inline_[inline_used_++].r) ChunkResult;
    return *more_.emplace_back(std::make_unique<ChunkResult>());
  }
  // Room for one result, left uninitialized until used (not zeroed: a result is kilobytes).
  union Slot {
    Slot() {}
    ~Slot() {}
    ChunkResult r;
  };

  const Env& env_;
  const Plan& plan_;
  EstimateCache* cache_;
  ChunkEnv chunk_env_;
  std::string base_key_;
  LayerStore store_;
  SmallVector<std::pair<ChunkSpec, const ChunkResult*>, 4> seen_;
  Slot inline_[4];
  size_t inline_used_ = 0;
  std::vector<std::unique_ptr<ChunkResult>> more_;
  SmallVector<const EfficiencyLog*, 8> merged_;  // template logs merged so far
};

// The whole of one pipeline rank as one chunk: its static memory, DP and optimizer.
[[nodiscard]] ChunkSpec rank_spec(const Plan& p, int64_t r);

}  // namespace detail
}  // namespace trainsim
