// Activation liveness walk and static memory.
#include "memory/activation.h"

#include <algorithm>

#include "core/small_vector.h"

namespace trainsim {
namespace {

// The chunk's leaves in call order, read in place: the embedding, each layer's template leaves
// (recomputed where the layer is and the leaf takes part), the head. A position steps over the
// spans in either direction, so recompute segments may cross layers. The spans are inline up to
// 30 layers.
class LeafSeq {
 public:
  LeafSeq(const Chunk& chunk, const Settings& s) {
    spans_.assign(chunk.layers.size() + 2, {});
    Span* sp = spans_.begin();
    *sp++ = {chunk.pre.data(), chunk.pre.data() + chunk.pre.size(), false};
    for (const auto& layer : chunk.layers) {
      const auto& leaves = chunk.templates[static_cast<size_t>(layer.template_index)]->leaves;
      *sp++ = {leaves.data(), leaves.data() + leaves.size(), layer.recompute && s.rc.enabled};
    }
    *sp = {chunk.post.data(), chunk.post.data() + chunk.post.size(), false};
  }
  struct Span {
    const Leaf* begin = nullptr;
    const Leaf* end = nullptr;
    bool recompute = false;  // the layer is recomputed
  };
  struct Pos {
    size_t span;
    const Leaf* leaf;
    bool operator==(const Pos&) const = default;
  };
  [[nodiscard]] const SmallVector<Span, 32>& spans() const { return spans_; }
  // Recomputed in this instance.
  [[nodiscard]] bool rc(const Pos& p) const { return spans_[p.span].recompute && p.leaf->recompute; }
  // The position before `p`; false at the first leaf.
  bool prev(Pos& p) const {
    if (p.leaf != spans_[p.span].begin) {
      --p.leaf;
      return true;
    }
    for (size_t i = p.span; i-- > 0;)
      if (spans_[i].begin != spans_[i].end) {
        p = {i, spans_[i].end - 1};
        return true;
      }
    return false;
  }
  // The position after `p`, which must have one.
  void next(Pos& p) const {
    if (++p.leaf != spans_[p.span].end) return;
    do ++p.span;
    while (spans_[p.span].begin == spans_[p.span].end);
    p.leaf = spans_[p.span].begin;
  }
  // The last leaf; false when there is none.
  bool last(Pos& p) const {
    p = {spans_.size() - 1, spans_.back().end};
    if (p.leaf != spans_.back().begin) {
      --p.leaf;
      return true;
    }
    return prev(p);
  }

 private:
  SmallVector<Span, 32> spans_;
};

// Bytes a leaf keeps for the backward when the forward runs it: a recomputed leaf keeps only the
// input of its checkpointed segment (none if the input is offloaded).
double forward_keep(const Leaf& l, bool rc, const Settings& s) {
  if (rc)
    return l.status == RecomputeStatus::First && !(s.off.groupgemm_col_inputs && l.grouped) ? l.input_bytes
                                                                                                : 0;
  return l.cache;
}

// Bytes a recomputed leaf keeps when its segment is recomputed in the backward.
double recompute_keep(const Leaf& l) { return l.has_cached_inputs ? l.cache_inputs_cached : l.cache; }

}  // namespace

ActivationResult walk_activations(const Chunk& chunk, const Settings& s) {
  const LeafSeq seq(chunk, s);
  ActivationResult r;
  PeakPoint& pk = r.peak;
  constexpr std::string_view kForwardEnd = "forward_end";
  double G = 0;
  for (const auto& span : seq.spans())
    for (const Leaf* l = span.begin; l != span.end; ++l) {
      pk.update(G, l->fpk, PeakPoint::kForward, l->name);
      const bool rc = span.recompute && l->recompute;
      if (!rc) r.offloaded_per_mb += l->offload_bytes;
      G += forward_keep(*l, rc, s);
    }
  pk.update(G, 0, PeakPoint::kForward, kForwardEnd);
  r.cache_per_mb = G;
  LeafSeq::Pos p{};
  for (bool more = seq.last(p); more;) {
    const LeafSeq::Span& span = seq.spans()[p.span];
    if (!span.recompute) {
      // No recomputed leaf from here back to the span's start.
      for (const Leaf* l = p.leaf;; --l) {
        pk.update(G, l->bpk, PeakPoint::kBackward, l->name);
        G -= l->cache;
        if (l == span.begin) break;
      }
      p.leaf = span.begin;
      more = seq.prev(p);
      continue;
    }
    const Leaf& l = *p.leaf;
    if (!l.recompute) {
      pk.update(G, l.bpk, PeakPoint::kBackward, l.name);
      G -= l.cache;
      more = seq.prev(p);
      continue;
    }
    // The recomputed segment ending here: back to its first leaf (or the first recomputed one).
    LeafSeq::Pos j = p;
    for (LeafSeq::Pos before = j; j.leaf->status != RecomputeStatus::First && seq.prev(before) && seq.rc(before);)
      j = before;
    for (LeafSeq::Pos k = j;; seq.next(k)) {
      pk.update(G, k.leaf->fpk, PeakPoint::kRecomputeForward, k.leaf->name);
      if (k != j) G += recompute_keep(*k.leaf);
      if (k == p) break;
    }
    for (LeafSeq::Pos k = p;; seq.prev(k)) {
      pk.update(G, k.leaf->bpk, PeakPoint::kRecomputeBackward, k.leaf->name);
      G -= k == j ? forward_keep(*k.leaf, true, s) : recompute_keep(*k.leaf);
      if (k == j) break;
    }
    p = j;
    more = seq.prev(p);
  }
  return r;
}

StaticMemory chunk_parameters(const Chunk& chunk) {
  StaticMemory m;
  auto add = [&](const Leaf& l) {
    if (l.params == 0) return;
    if (l.moe_params) {
      m.moe_params += l.params;
      m.moe_weight += l.params * l.weight_elem_bytes;
    } else {
      m.dense_params += l.params;
      m.weight += l.params * l.weight_elem_bytes;
    }
  };
  for (const auto& l : chunk.pre) add(l);
  for (const auto& l : chunk.post) add(l);
  for (const auto& layer : chunk.layers)
    for (const auto& l : chunk.templates[static_cast<size_t>(layer.template_index)]->leaves) add(l);
  return m;
}

StaticMemory shard_static_memory(StaticMemory m, const Settings& s) {
  const double mg = (s.prec.grad_reduce_in_bf16 || !s.prec.fp32_accum_grad) ? 2 : 4;
  m.grad = m.dense_params * mg;
  m.state = m.dense_params * 12;  // fp32 master weight + Adam m and v
  m.moe_grad = m.moe_params * mg;
  m.moe_state = m.moe_params * 12;
  // ZeRO: 1 shards optimizer states, 2 also gradients, 3 also weights (dense over dp·cp,
  // expert parameters over edp).
  const double dpcp = static_cast<double>(s.par.dp * s.par.cp), edp = static_cast<double>(s.par.edp);
  if (s.ovl.zero_state >= 1) {
    m.state /= dpcp;
    m.moe_state /= edp;
  }
  if (s.ovl.zero_state >= 2) {
    m.grad /= dpcp;
    m.moe_grad /= edp;
  }
  if (s.ovl.zero_state >= 3) {
    m.weight /= dpcp;
    m.moe_weight /= edp;
  }
  return m;
}

StaticMemory static_memory(const Chunk& chunk, const Settings& s) {
  return shard_static_memory(chunk_parameters(chunk), s);
}

double dummy_wgrad_bytes(const Chunk& chunk) {
  SmallVector<std::array<int64_t, 3>, 8> shapes;  // (rows, cols, grouped) seen
  double bytes = 0;
  auto add = [&](const Leaf& l) {
    if (l.dummy_wgrad_bytes == 0) return;
    const std::array<int64_t, 3> key{l.dummy_rows, l.dummy_cols, l.grouped ? 1 : 0};
    if (std::find(shapes.begin(), shapes.end(), key) != shapes.end()) return;
    shapes.push_back(key);
    bytes += static_cast<double>(key[0]) * static_cast<double>(key[1]) * 2;
  };
  for (const auto& l : chunk.pre) add(l);
  for (const auto& t : chunk.templates)
    for (const auto& l : t->leaves) add(l);
  for (const auto& l : chunk.post) add(l);
  return bytes;
}

}  // namespace trainsim
