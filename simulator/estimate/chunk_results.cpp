// Chunk results of one estimate, through the cache.
#include "estimate/chunk_results.h"

#include <algorithm>

namespace trainsim {

EstimateCache::EstimateCache() : impl_(std::make_unique<Impl>()) {}
EstimateCache::~EstimateCache() = default;
EstimateCache::EstimateCache(const EstimateCache&) : impl_(std::make_unique<Impl>()) {}
EstimateCache& EstimateCache::operator=(const EstimateCache&) {
  impl_ = std::make_unique<Impl>();
  return *this;
}
int64_t EstimateCache::hits() const { return impl_->hits; }
int64_t EstimateCache::misses() const { return impl_->misses; }
int64_t EstimateCache::layer_builds() const { return impl_->layers.builds; }

namespace detail {

const ChunkResult& ChunkResults::get(const ChunkSpec& spec) {
  for (const auto& [sp, r] : seen_)
    if (sp == spec) return *r;
  const ChunkResult* r = nullptr;
  if (!cache_) {
    ChunkResult& fresh = local();
    evaluate_chunk(fresh, env_, store_, spec, plan_.padded_vocab, chunk_env_);
    r = &fresh;
  } else {
    EstimateCache::Impl& c = cache_->impl();
    std::string key = base_key_;
    for (int64_t v : {spec.layers, spec.dense_layers, spec.recompute_layers, spec.mtp_layers, plan_.padded_vocab})
      key.append(reinterpret_cast<const char*>(&v), sizeof v);
    key += spec.embedding ? 'E' : '-';
    key += spec.head ? 'H' : '-';
    auto it = c.chunks.find(key);
    if (it != c.chunks.end()) {
      ++c.hits;
      r = &it->second;
    } else {
      ++c.misses;
      ChunkResult fresh;
      evaluate_chunk(fresh, env_, store_, spec, plan_.padded_vocab, chunk_env_);
      r = &c.chunks.emplace(std::move(key), std::move(fresh)).first->second;
    }
  }
  seen_.emplace_back(spec, r);
  // In the chunk's order: embedding and head, then its templates. Chunks share templates: a
  // template's misses are recorded by the first chunk using it, its hits counted by each.
  env_.log->merge(r->log);
  for (const auto& t : r->ops.templates) {
    if (std::find(merged_.begin(), merged_.end(), &t->log) != merged_.end()) {
      env_.log->add_counts(t->log);
    } else {
      env_.log->merge(t->log);
      merged_.push_back(&t->log);
    }
  }
  return *r;
}

ChunkSpec rank_spec(const Plan& p, int64_t r) {
  const auto& cs = p.chunks[static_cast<size_t>(r)];
  if (cs.size() == 1) return cs[0];
  ChunkSpec all;
  for (const auto& c : cs) {
    all.embedding = all.embedding || c.embedding;
    all.head = all.head || c.head;
    all.layers += c.layers;
    all.dense_layers += c.dense_layers;
    all.mtp_layers += c.mtp_layers;
  }
  all.recompute_layers = p.rc.on ? std::min(all.layers, p.rc.layers) : 0;
  return all;
}


}  // namespace detail
}  // namespace trainsim
