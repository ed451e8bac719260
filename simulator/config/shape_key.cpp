// Shape-key parsing and formatting (the peer's exact formats, SimuMax base_struct.py).
#include "config/shape_key.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {
namespace {

const std::vector<std::string> kLayouts = {"TN", "NN", "NT"};
const std::vector<std::string> kOutDtypes = {"bf16", "fp16", "fp32"};
const std::vector<std::string> kInDtypes = {"bf16", "fp16", "fp8"};
const std::vector<std::string> kStages = {"fwd", "bwd_grad_act", "bwd_grad_w"};
const std::vector<std::string> kBools = {"True", "False"};

const char* py_bool(bool v) { return v ? "True" : "False"; }

// Splits a key into name=value fields and checks the names against the expected order.
class FieldReader {
 public:
  FieldReader(const std::string& key, std::vector<std::string> names, std::string source,
              std::string path)
      : key_(key), names_(std::move(names)), source_(std::move(source)), path_(std::move(path)) {
    size_t pos = 0;
    while (true) {
      size_t end = key.find(", ", pos);
      std::string tok = key.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      size_t eq = tok.find('=');
      if (eq == std::string::npos)
        fail("field " + std::to_string(fields_.size() + 1) + " '" + tok +
             "': expected 'name=value'");
      fields_.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
      if (end == std::string::npos) break;
      pos = end + 2;
    }
    if (fields_.size() != names_.size())
      fail(strprintf("expected %zu fields (%s), got %zu", names_.size(), join(names_).c_str(),
                     fields_.size()));
    for (size_t i = 0; i < names_.size(); ++i) {
      if (fields_[i].first == names_[i]) continue;
      fail(strprintf("field %zu: expected '%s', got '%s'", i + 1, names_[i].c_str(),
                     fields_[i].first.c_str()));
    }
  }

  int64_t integer(size_t i) const {
    const std::string& v = fields_[i].second;
    int64_t out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || out < 1 || v[0] == '0')
      fail(names_[i] + ": expected a positive integer, got '" + v + "'");
    return out;
  }

  bool boolean(size_t i) const { return choice(i, kBools) == "True"; }

  std::string choice(size_t i, const std::vector<std::string>& allowed) const {
    const std::string& v = fields_[i].second;
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
    std::string msg = names_[i] + ": expected one of " + join(allowed) + ", got '" + v + "'";
    std::string s = suggest(v, allowed);
    if (!s.empty()) msg += "; did you mean '" + s + "'?";
    fail(msg);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(source_, path_, "shape key '" + key_ + "': " + what);
  }

  const std::string& key_;
  std::vector<std::string> names_;
  std::string source_, path_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace

const std::vector<std::string>& keyed_ops() {
  static const std::vector<std::string> ops = {"matmul",   "fp8_matmul", "group_matmul",
                                               "fp8_group_matmul", "sdp_fwd", "sdp_bwd"};
  return ops;
}

bool is_fp8_op(std::string_view op) { return op.substr(0, 4) == "fp8_"; }

ShapeKey parse_shape_key(const std::string& op, const std::string& key, const std::string& source,
                         const std::string& path) {
  if (op == "matmul" || op == "fp8_matmul") {
    FieldReader f(key, {"b", "m", "k", "n", "layout", "accumulate", "out_dtype"}, source, path);
    return MatmulShape{f.integer(0),        f.integer(1), f.integer(2),
                       f.integer(3),        f.choice(4, kLayouts), f.boolean(5),
                       f.choice(6, kOutDtypes)};
  }
  if (op == "group_matmul" || op == "fp8_group_matmul") {
    FieldReader f(key,
                  {"ng", "M", "N", "K", "dtype", "out_dtype", "main_grad_dtype", "stage", "grad",
                   "accumulate", "use_split_accumulator", "single_output"},
                  source, path);
    GroupedMatmulShape g;
    g.ng = f.integer(0);
    g.m = f.integer(1);
    g.n = f.integer(2);
    g.k = f.integer(3);
    g.dtype = f.choice(4, kInDtypes);
    g.out_dtype = f.choice(5, kOutDtypes);
    g.main_grad_dtype = f.choice(6, kOutDtypes);
    g.stage = f.choice(7, kStages);
    g.grad = f.boolean(8);
    g.accumulate = f.boolean(9);
    g.use_split_accumulator = f.boolean(10);
    g.single_output = f.boolean(11);
    return g;
  }
  if (op == "sdp_fwd" || op == "sdp_bwd") {
    FieldReader f(key,
                  {"batch", "seq_len", "head_num", "kv_head_num", "qk_head_dim", "v_head_dim",
                   "qkv_contiguous"},
                  source, path);
    return SdpaShape{f.integer(0), f.integer(1), f.integer(2), f.integer(3),
                     f.integer(4), f.integer(5), f.boolean(6)};
  }
  std::string msg = "op class '" + op + "' has no shape keys; valid values: " + join(keyed_ops());
  std::string s = suggest(op, keyed_ops());
  if (!s.empty()) msg += "; did you mean '" + s + "'?";
  throw ConfigError(source, path, msg);
}

std::vector<std::pair<std::string, std::string>> shape_fields(const ShapeKey& shape) {
  auto n = [](int64_t v) { return std::to_string(v); };
  if (const auto* s = std::get_if<MatmulShape>(&shape))
    return {{"b", n(s->b)},           {"m", n(s->m)},
            {"k", n(s->k)},           {"n", n(s->n)},
            {"layout", s->layout},    {"accumulate", py_bool(s->accumulate)},
            {"out_dtype", s->out_dtype}};
  if (const auto* g = std::get_if<GroupedMatmulShape>(&shape))
    return {{"ng", n(g->ng)},
            {"M", n(g->m)},
            {"N", n(g->n)},
            {"K", n(g->k)},
            {"dtype", g->dtype},
            {"out_dtype", g->out_dtype},
            {"main_grad_dtype", g->main_grad_dtype},
            {"stage", g->stage},
            {"grad", py_bool(g->grad)},
            {"accumulate", py_bool(g->accumulate)},
            {"use_split_accumulator", py_bool(g->use_split_accumulator)},
            {"single_output", py_bool(g->single_output)}};
  const auto& a = std::get<SdpaShape>(shape);
  return {{"batch", n(a.batch)},
          {"seq_len", n(a.seq_len)},
          {"head_num", n(a.head_num)},
          {"kv_head_num", n(a.kv_head_num)},
          {"qk_head_dim", n(a.qk_head_dim)},
          {"v_head_dim", n(a.v_head_dim)},
          {"qkv_contiguous", py_bool(a.qkv_contiguous)}};
}

std::string format_shape_key(const ShapeKey& shape) {
  std::string out;
  for (const auto& [name, value] : shape_fields(shape)) {
    if (!out.empty()) out += ", ";
    out += name + "=" + value;
  }
  return out;
}

double shape_flops(const std::string& op, const ShapeKey& shape) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  // LinearBase.get_gemm_bmnk / test_gemm_efficiency.py: 2*b*m*n*k.
  if (const auto* s = std::get_if<MatmulShape>(&shape)) return 2 * d(s->b) * d(s->m) * d(s->n) * d(s->k);
  // test_grouped_gemm_efficiency.py: 2*M*N*K per local expert.
  if (const auto* g = std::get_if<GroupedMatmulShape>(&shape))
    return 2 * d(g->ng) * d(g->m) * d(g->n) * d(g->k);
  // test_fa_efficiency.py: base = B*S^2*max(h,h_kv)*(d_qk+d_v); fwd 2*base, bwd 5*base.
  const auto& a = std::get<SdpaShape>(shape);
  double base = d(a.batch) * d(a.seq_len) * d(a.seq_len) * d(std::max(a.head_num, a.kv_head_num)) *
                d(a.qk_head_dim + a.v_head_dim);
  return op == "sdp_bwd" ? 5 * base : 2 * base;
}

}  // namespace trainsim
