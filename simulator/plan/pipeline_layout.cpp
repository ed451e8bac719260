// Megatron's pipeline split: the layout string parser (PipelineParallelLayerLayout) and the
// flag-driven split (get_num_layers_to_build), both as pp·v virtual stages.
#include "plan/pipeline_layout.h"

#include <cctype>

#include "plan/validate.h"
#include "core/text.h"

namespace trainsim {
namespace {

// Letters after expanding repeats; bounds the work a hostile layout can ask for.
constexpr size_t kMaxLayoutLetters = size_t{1} << 20;
// Nesting of parenthesised groups (the parser recurses once per level).
constexpr int kMaxLayoutDepth = 64;

// Recursive descent over: seq := item*; item := atom ('*' digits)?; atom := letter | '|' | '(' seq ')'.
// The result is the expanded letter sequence, '|' included.
class LayoutParser {
 public:
  explicit LayoutParser(const std::string& text) : t_(text) {}

  bool parse(std::string& out, std::string* reason) {
    if (!seq(out)) return report(reason);
    if (pos_ < t_.size()) {  // seq stops early only at a ')' it did not open
      fail("unmatched ')'");
      return report(reason);
    }
    return true;
  }

 private:
  bool seq(std::string& out) {
    while (skip(), pos_ < t_.size() && t_[pos_] != ')') {
      std::string atom;
      const char c = t_[pos_];
      if (c == '(') {
        if (++depth_ > kMaxLayoutDepth) return fail(strprintf("groups nest deeper than %d", kMaxLayoutDepth));
        ++pos_;
        if (!seq(atom)) return false;
        --depth_;
        skip();
        if (pos_ >= t_.size()) return fail("unmatched '('");
        ++pos_;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        atom = c;
        ++pos_;
      } else {
        return fail(strprintf("unknown letter '%c'; valid letters: E (embedding), t (decoder layer), "
                              "m (MTP layer), L (output layer and loss), | (next stage)", c));
      }
      int64_t times = 1;
      skip();
      if (pos_ < t_.size() && t_[pos_] == '*') {
        ++pos_;
        skip();
        const size_t start = pos_;
        times = 0;
        while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_])) &&
               times <= static_cast<int64_t>(kMaxLayoutLetters))
          times = times * 10 + (t_[pos_++] - '0');
        if (pos_ == start) return fail("'*' must be followed by a repeat count");
      }
      if (!atom.empty() && static_cast<size_t>(times) > (kMaxLayoutLetters - out.size()) / atom.size())
        return fail(strprintf("expands to more than %zu letters", kMaxLayoutLetters));
      for (int64_t i = 0; i < times; ++i) out += atom;
    }
    return true;
  }
  void skip() {
    while (pos_ < t_.size() && (t_[pos_] == ',' || std::isspace(static_cast<unsigned char>(t_[pos_])))) ++pos_;
  }
  bool fail(std::string why) {
    if (why_.empty()) why_ = std::move(why) + strprintf(" at character %zu", pos_ + 1);
    return false;
  }
  bool report(std::string* reason) const {
    if (reason) *reason = why_;
    return false;
  }

  const std::string& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::string why_;
};

// The layout text's stages (parse_pipeline_layout without its memory).
bool parse_layout_text(const std::string& text, std::vector<VirtualStage>& out, std::string* reason) {
  std::string letters;
  if (!LayoutParser(text).parse(letters, reason)) return false;
  out.assign(1, VirtualStage{});
  for (char c : letters) {
    VirtualStage& st = out.back();
    switch (c) {
      case '|': out.emplace_back(); break;
      case 'E': st.embedding = true; break;
      case 'L': st.loss = true; break;
      case 't': ++st.layers; break;
      case 'm': ++st.mtp_layers; break;
      default: break;
    }
  }
  return true;
}

int64_t virtual_layers(const StrategyConfig& s) {
  return (s.account_for_embedding_in_pipeline_split ? 1 : 0) + (s.account_for_loss_in_pipeline_split ? 1 : 0);
}

bool layout_stages(const ModelConfig& m, const StrategyConfig& s, std::vector<VirtualStage>& out,
                   std::string* path, std::string* reason) {
  auto fail = [&](const char* key, std::string why) {
    if (path) *path = key;
    if (reason) *reason = std::move(why);
    return false;
  };
  // A layout fixes the split and the virtual stages; Megatron rejects the flags it replaces.
  const struct { const char* key; bool set; } replaced[] = {
      {"/num_layers_in_first_pipeline_stage", s.num_layers_in_first_pipeline_stage.has_value()},
      {"/num_layers_in_last_pipeline_stage", s.num_layers_in_last_pipeline_stage.has_value()},
      {"/account_for_embedding_in_pipeline_split", s.account_for_embedding_in_pipeline_split},
      {"/account_for_loss_in_pipeline_split", s.account_for_loss_in_pipeline_split},
      {"/num_layers_per_virtual_pipeline_stage", s.num_layers_per_virtual_pipeline_stage.has_value()},
      {"/interleaving_size", s.interleaving_size != 1}};
  for (const auto& r : replaced)
    if (r.set)
      return fail(r.key, "cannot be combined with pipeline_model_parallel_layout, which fixes the layer split "
                         "and the virtual stages; remove it");
  std::string why;
  if (!parse_pipeline_layout(*s.pipeline_model_parallel_layout, out, &why))
    return fail("/pipeline_model_parallel_layout", why);
  const auto n = static_cast<int64_t>(out.size());
  if (n % s.pp_size != 0)
    return fail("/pipeline_model_parallel_layout",
                strprintf("lists %lld stages, not a multiple of pp_size (%lld): stage i runs on rank i mod pp_size",
                          static_cast<long long>(n), static_cast<long long>(s.pp_size)));
  int64_t embeddings = 0, losses = 0, layers = 0, mtp = 0;
  for (const auto& st : out) {
    embeddings += st.embedding;
    losses += st.loss;
    layers += st.layers;
    mtp += st.mtp_layers;
  }
  if (embeddings != 1 || !out.front().embedding)
    return fail("/pipeline_model_parallel_layout", "needs one E (embedding), in the first stage");
  if (losses != 1 || !out.back().loss)
    return fail("/pipeline_model_parallel_layout", "needs one L (output layer and loss), in the last stage");
  if (layers != m.layer_num)
    return fail("/pipeline_model_parallel_layout",
                strprintf("holds %lld decoder layers (t) but the model has layer_num %lld",
                          static_cast<long long>(layers), static_cast<long long>(m.layer_num)));
  if (mtp > 0 && m.mtp_num_layers == 0)
    return fail("/pipeline_model_parallel_layout",
                strprintf("holds %lld MTP layers (m) but the model has no MTP layers (mtp_num_layers 0)",
                          static_cast<long long>(mtp)));
  if (mtp != m.mtp_num_layers)
    return fail("/pipeline_model_parallel_layout",
                strprintf("holds %lld MTP layers (m) but the model has mtp_num_layers %lld",
                          static_cast<long long>(mtp), static_cast<long long>(m.mtp_num_layers)));
  return true;
}

}  // namespace

bool parse_pipeline_layout(const std::string& text, std::vector<VirtualStage>& out, std::string* reason) {
  // The layouts parsed last on this thread, with their stages or the reason they are none: a
  // search validates, normalizes and resolves each of its few layouts hundreds of times.
  struct Parsed {
    std::string text;
    bool ok = false;
    std::vector<VirtualStage> stages;
    std::string reason;
  };
  thread_local std::vector<Parsed> parsed;
  const Parsed* hit = nullptr;
  for (const Parsed& p : parsed)
    if (p.text == text) {
      hit = &p;
      break;
    }
  if (!hit) {
    if (parsed.size() >= 64) parsed.erase(parsed.begin());  // bounded: the oldest goes
    Parsed& p = parsed.emplace_back();
    p.text = text;
    p.ok = parse_layout_text(text, p.stages, &p.reason);
    hit = &p;
  }
  if (!hit->ok) {
    if (reason) *reason = hit->reason;
    return false;
  }
  out = hit->stages;
  return true;
}

int64_t virtual_stages_per_rank(const ModelConfig& m, const StrategyConfig& s) {
  const int64_t pp = s.pp_size;
  if (pp < 1) return 1;
  if (s.pipeline_model_parallel_layout) {
    std::vector<VirtualStage> st;
    if (!parse_pipeline_layout(*s.pipeline_model_parallel_layout, st, nullptr)) return 1;
    const auto n = static_cast<int64_t>(st.size());
    return n % pp == 0 ? n / pp : 1;
  }
  if (s.num_layers_per_virtual_pipeline_stage) {
    // Megatron (arguments.py): per-rank layers, embedding/loss counted, / layers per virtual stage.
    const int64_t total = m.layer_num + virtual_layers(s), n = *s.num_layers_per_virtual_pipeline_stage;
    if (n < 1 || total % pp != 0 || (total / pp) % n != 0) return 1;
    return total / pp / n;
  }
  return s.interleaving_size;
}

bool pipeline_stages(const ModelConfig& m, const StrategyConfig& s, std::vector<VirtualStage>& out,
                     std::string* path, std::string* reason) {
  if (s.pipeline_model_parallel_layout) return layout_stages(m, s, out, path, reason);
  auto fail = [&](const char* key, std::string why) {
    if (path) *path = key;
    if (reason) *reason = std::move(why);
    return false;
  };
  const int64_t pp = s.pp_size;
  if (s.num_layers_per_virtual_pipeline_stage) {
    if (s.interleaving_size != 1)
      return fail("/num_layers_per_virtual_pipeline_stage",
                  "cannot be combined with interleaving_size (num_virtual_stages_per_pipeline_rank); give one");
    if (s.num_layers_in_first_pipeline_stage || s.num_layers_in_last_pipeline_stage)
      return fail("/num_layers_per_virtual_pipeline_stage",
                  "cannot be combined with uneven first/last stages (Megatron); use "
                  "num_virtual_stages_per_pipeline_rank");
    const int64_t total = m.layer_num + virtual_layers(s), n = *s.num_layers_per_virtual_pipeline_stage;
    if (total % pp != 0 || (total / pp) % n != 0)
      return fail("/num_layers_per_virtual_pipeline_stage",
                  strprintf("%lld does not divide the layers of a pipeline rank (%lld layers%s over pp_size %lld)",
                            static_cast<long long>(n), static_cast<long long>(total),
                            virtual_layers(s) ? " with the embedding/loss counted" : "", static_cast<long long>(pp)));
  }
  StageLayers split;
  std::string why;
  if (!split_layers(m.layer_num, s, split, &why)) return fail("/pp_size", why);
  const int64_t v = virtual_stages_per_rank(m, s);
  // Megatron get_num_layers_to_build: the layers of a rank (embedding / loss counted as one
  // layer each when accounted for) split evenly over its v chunks, then the first / last virtual
  // stage builds one layer fewer for the embedding / loss it holds instead.
  std::vector<int64_t> per_rank(static_cast<size_t>(pp), split.middle);
  per_rank.front() = split.first + (pp > 1 && s.account_for_embedding_in_pipeline_split ? 1 : 0);
  if (pp > 1) per_rank.back() = split.last + (s.account_for_loss_in_pipeline_split ? 1 : 0);
  for (int64_t r = 0; r < pp; ++r) {
    const int64_t n = per_rank[static_cast<size_t>(r)];
    if (n % v == 0) continue;
    const char* what = r == 0 ? "first" : r == pp - 1 ? "last" : "middle";
    return fail("/interleaving_size", strprintf("the %s pipeline stage's %lld layers do not divide into %lld virtual chunks",
                                                what, static_cast<long long>(n), static_cast<long long>(v)));
  }
  out.assign(static_cast<size_t>(pp * v), VirtualStage{});
  for (int64_t i = 0; i < pp * v; ++i) out[static_cast<size_t>(i)].layers = per_rank[static_cast<size_t>(i % pp)] / v;
  out.front().embedding = true;
  out.back().loss = true;
  if (pp > 1 && s.account_for_embedding_in_pipeline_split) --out.front().layers;
  if (pp > 1 && s.account_for_loss_in_pipeline_split) --out.back().layers;
  if (out.front().layers < 0 || out.back().layers < 0)
    return fail("/pp_size", "a pipeline stage would get no layers");
  return true;
}

}  // namespace trainsim
