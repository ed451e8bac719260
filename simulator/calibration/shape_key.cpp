// Shape-key parsing and formatting (the peer's exact formats, SimuMax base_struct.py).
#include "calibration/shape_key.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "calibration/op_class.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {
namespace {

// The fields of each kind in key order: the one list the structured parser, the packed parser
// and the formatter read.
enum class FieldType : uint8_t { Num, Layout, Dtype, Stage, Bool };
struct Field {
  const char* name;
  FieldType type;
};
using F = FieldType;
constexpr Field kMatmulFields[] = {{"b", F::Num},      {"m", F::Num},          {"k", F::Num},
                                   {"n", F::Num},      {"layout", F::Layout},  {"accumulate", F::Bool},
                                   {"out_dtype", F::Dtype}};
constexpr Field kGroupedFields[] = {{"ng", F::Num},
                                    {"M", F::Num},
                                    {"N", F::Num},
                                    {"K", F::Num},
                                    {"dtype", F::Dtype},
                                    {"out_dtype", F::Dtype},
                                    {"main_grad_dtype", F::Dtype},
                                    {"stage", F::Stage},
                                    {"grad", F::Bool},
                                    {"accumulate", F::Bool},
                                    {"use_split_accumulator", F::Bool},
                                    {"single_output", F::Bool}};
constexpr Field kSdpaFields[] = {{"batch", F::Num},       {"seq_len", F::Num},    {"head_num", F::Num},
                                 {"kv_head_num", F::Num},  {"qk_head_dim", F::Num}, {"v_head_dim", F::Num},
                                 {"qkv_contiguous", F::Bool}};
constexpr const char* kLayoutNames[] = {"TN", "NN", "NT"};
constexpr const char* kDtypeNames[] = {"bf16", "fp16", "fp32", "fp8"};
constexpr const char* kStageNames[] = {"fwd", "bwd_grad_act", "bwd_grad_w"};

std::pair<const Field*, size_t> fields_of(KeyKind kind) {
  switch (kind) {
    case KeyKind::Matmul: return {kMatmulFields, std::size(kMatmulFields)};
    case KeyKind::Grouped: return {kGroupedFields, std::size(kGroupedFields)};
    case KeyKind::Sdpa: return {kSdpaFields, std::size(kSdpaFields)};
    case KeyKind::None: break;
  }
  return {nullptr, 0};
}

// The field names of a kind, in key order.
std::vector<std::string> field_names(KeyKind kind) {
  const auto [fields, count] = fields_of(kind);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) out.emplace_back(fields[i].name);
  return out;
}

const std::vector<std::string> kLayouts(std::begin(kLayoutNames), std::end(kLayoutNames));
const std::vector<std::string> kOutDtypes = {"bf16", "fp16", "fp32"};
const std::vector<std::string> kInDtypes = {"bf16", "fp16", "fp8"};
const std::vector<std::string> kStages(std::begin(kStageNames), std::end(kStageNames));
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
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> out;
    for (const OpClassRow& row : kOpClassRows)
      if (row.key != KeyKind::None) out.emplace_back(row.name);
    return out;
  }();
  return ops;
}

bool is_fp8_op(std::string_view op) {
  const std::optional<OpClass> c = find_op_class(op);
  return c && op_row(*c).fp8;
}

ShapeKey parse_shape_key(const std::string& op, const std::string& key, const std::string& source,
                         const std::string& path) {
  const std::optional<OpClass> cls = find_op_class(op);
  const KeyKind kind = cls ? op_row(*cls).key : KeyKind::None;
  if (kind == KeyKind::Matmul) {
    FieldReader f(key, field_names(KeyKind::Matmul), source, path);
    return MatmulShape{f.integer(0),        f.integer(1), f.integer(2),
                       f.integer(3),        f.choice(4, kLayouts), f.boolean(5),
                       f.choice(6, kOutDtypes)};
  }
  if (kind == KeyKind::Grouped) {
    FieldReader f(key, field_names(KeyKind::Grouped), source, path);
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
  if (kind == KeyKind::Sdpa) {
    FieldReader f(key, field_names(KeyKind::Sdpa), source, path);
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
  const std::optional<OpClass> cls = find_op_class(op);
  return cls && op_row(*cls).backward ? 5 * base : 2 * base;
}

namespace {

std::pair<const char* const*, size_t> names_of(FieldType t) {
  if (t == F::Layout) return {kLayoutNames, std::size(kLayoutNames)};
  if (t == F::Dtype) return {kDtypeNames, std::size(kDtypeNames)};
  return {kStageNames, std::size(kStageNames)};
}

// The value a non-integral key field prints: what `%.0f` prints (round half to even, "-0", inf,
// nan with its sign).
double pack_rounded(double v) {
  if (std::isnan(v)) return std::copysign(std::numeric_limits<double>::quiet_NaN(), v);
  return std::nearbyint(v);
}

// The value a key field prints, one double per text: integral values (the Python int the peer
// prints, 0 without sign: the round trip through int64 drops it), else pack_rounded.
inline double pack_value(double v) {
  if (std::fabs(v) < 9e15) {
    const double r = static_cast<double>(static_cast<int64_t>(v));
    if (r == v) return r;
  }
  return pack_rounded(v);
}

void put_value(std::string& out, double v) {
  if (std::round(v) == v && std::fabs(v) < 9e15 && !(v == 0 && std::signbit(v))) {
    char digits[24];
    const auto res = std::to_chars(digits, digits + sizeof digits, static_cast<int64_t>(v));
    out.append(digits, res.ptr);
  } else {
    out += strprintf("%.0f", v);
  }
}

}  // namespace

PackedKey matmul_key(double b, double m, double k, double n, KeyLayout layout, bool accumulate,
                     KeyDtype out_dtype) {
  PackedKey key;
  key.kind = KeyKind::Matmul;
  key.num[0] = pack_value(b);
  key.num[1] = pack_value(m);
  key.num[2] = pack_value(k);
  key.num[3] = pack_value(n);
  key.choice[0] = static_cast<uint8_t>(layout);
  key.choice[1] = static_cast<uint8_t>(out_dtype);
  key.flags = accumulate ? 1 : 0;
  return key;
}

PackedKey grouped_key(double ng, double m, double n, double k, KeyDtype dtype, KeyDtype out_dtype,
                      KeyDtype main_grad_dtype, KeyStage stage, bool grad, bool accumulate,
                      bool use_split_accumulator, bool single_output) {
  PackedKey key;
  key.kind = KeyKind::Grouped;
  key.num[0] = pack_value(ng);
  key.num[1] = pack_value(m);
  key.num[2] = pack_value(n);
  key.num[3] = pack_value(k);
  key.choice[0] = static_cast<uint8_t>(dtype);
  key.choice[1] = static_cast<uint8_t>(out_dtype);
  key.choice[2] = static_cast<uint8_t>(main_grad_dtype);
  key.choice[3] = static_cast<uint8_t>(stage);
  key.flags = static_cast<uint8_t>((grad ? 1 : 0) | (accumulate ? 2 : 0) | (use_split_accumulator ? 4 : 0) |
                                   (single_output ? 8 : 0));
  return key;
}

PackedKey sdpa_key(double batch, double seq_len, double head_num, double kv_head_num, double qk_head_dim,
                   double v_head_dim, bool qkv_contiguous) {
  PackedKey key;
  key.kind = KeyKind::Sdpa;
  key.num[0] = pack_value(batch);
  key.num[1] = pack_value(seq_len);
  key.num[2] = pack_value(head_num);
  key.num[3] = pack_value(kv_head_num);
  key.num[4] = pack_value(qk_head_dim);
  key.num[5] = pack_value(v_head_dim);
  key.flags = qkv_contiguous ? 1 : 0;
  return key;
}

std::string format_packed_key(const PackedKey& key) {
  const auto [fields, count] = fields_of(key.kind);
  std::string out;
  out.reserve(192);  // the longest kind's text, one allocation
  size_t num = 0, choice = 0, flag = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += fields[i].name;
    out += '=';
    switch (fields[i].type) {
      case F::Num: put_value(out, key.num[num++]); break;
      case F::Bool: out += (key.flags >> flag++) & 1 ? "True" : "False"; break;
      default: out += names_of(fields[i].type).first[key.choice[choice++]]; break;
    }
  }
  return out;
}

std::optional<PackedKey> pack_shape_key(std::string_view text) {
  PackedKey key;
  const std::string_view first = text.substr(0, text.find('='));
  key.kind = first == "b" ? KeyKind::Matmul : first == "ng" ? KeyKind::Grouped
             : first == "batch" ? KeyKind::Sdpa : KeyKind::None;
  const auto [fields, count] = fields_of(key.kind);
  if (count == 0) return std::nullopt;
  size_t pos = 0, num = 0, choice = 0, flag = 0;
  for (size_t i = 0; i < count; ++i) {
    if (pos > text.size()) return std::nullopt;  // fewer fields than the kind has
    const size_t end = std::min(text.find(", ", pos), text.size());
    const std::string_view tok = text.substr(pos, end - pos);
    const size_t name_len = std::strlen(fields[i].name);
    if (tok.size() <= name_len || tok.substr(0, name_len) != fields[i].name || tok[name_len] != '=')
      return std::nullopt;
    const std::string_view v = tok.substr(name_len + 1);
    switch (fields[i].type) {
      case F::Num: {
        double d = 0;
        if (std::from_chars(v.data(), v.data() + v.size(), d).ec != std::errc()) return std::nullopt;
        key.num[num++] = std::isnan(d) ? pack_value(d) : d;
        break;
      }
      case F::Bool:
        if (v != "True" && v != "False") return std::nullopt;
        key.flags = static_cast<uint8_t>(key.flags | (v == "True" ? 1u << flag : 0u));
        ++flag;
        break;
      default: {
        const auto [names, n] = names_of(fields[i].type);
        const auto* it = std::find(names, names + n, v);
        if (it == names + n) return std::nullopt;
        key.choice[choice++] = static_cast<uint8_t>(it - names);
      }
    }
    pos = end + 2;
  }
  // Only a text the key prints back byte for byte is that key (e.g. not "m=04" or "m=4.5").
  if (format_packed_key(key) != text) return std::nullopt;
  return key;
}

}  // namespace trainsim
