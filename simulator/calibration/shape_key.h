// Efficiency-table shape keys: the peer's exact key strings <-> structured shapes, and the
// FLOP convention the simulator divides by `tflops * efficiency`.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace trainsim {

/// Dense GEMM (ops `matmul`, `fp8_matmul`):
/// `b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16`.
struct MatmulShape {
  int64_t b = 0, m = 0, k = 0, n = 0;
  std::string layout;     // TN (fprop), NN (dgrad), NT (wgrad)
  bool accumulate = false;
  std::string out_dtype;  // bf16, fp16 or fp32
};

/// MoE grouped GEMM (ops `group_matmul`, `fp8_group_matmul`): `ng=40, M=.., N=.., K=.., dtype=bf16,
/// out_dtype=bf16, main_grad_dtype=fp32, stage=fwd, grad=False, accumulate=False,
/// use_split_accumulator=False, single_output=True`. M = tokens per local expert.
struct GroupedMatmulShape {
  int64_t ng = 0, m = 0, n = 0, k = 0;
  std::string dtype, out_dtype, main_grad_dtype;
  std::string stage;  // fwd, bwd_grad_act or bwd_grad_w
  bool grad = false, accumulate = false, use_split_accumulator = false, single_output = false;
};

/// Fused attention (ops `sdp_fwd`, `sdp_bwd`): `batch=1, seq_len=4096, head_num=32,
/// kv_head_num=8, qk_head_dim=128, v_head_dim=128, qkv_contiguous=True`.
struct SdpaShape {
  int64_t batch = 0, seq_len = 0, head_num = 0, kv_head_num = 0, qk_head_dim = 0, v_head_dim = 0;
  bool qkv_contiguous = true;
};

using ShapeKey = std::variant<MatmulShape, GroupedMatmulShape, SdpaShape>;

/// Op classes that carry shape keys: matmul, fp8_matmul, group_matmul, fp8_group_matmul,
/// sdp_fwd, sdp_bwd.
[[nodiscard]] const std::vector<std::string>& keyed_ops();

/// True for the op classes whose keys describe FP8 inputs.
[[nodiscard]] bool is_fp8_op(std::string_view op);

/// Parses `key` for op class `op`. Fields must appear exactly in the peer's order and spelling
/// (the key is looked up byte for byte), so format_shape_key(parse_shape_key(k)) == k.
/// Throws ConfigError(source, path, ...) naming the offending field and what was expected.
[[nodiscard]] ShapeKey parse_shape_key(const std::string& op, const std::string& key,
                                       const std::string& source, const std::string& path);

/// The exact key string (Python-style booleans, fields separated by ", ").
[[nodiscard]] std::string format_shape_key(const ShapeKey& shape);

/// (name, value) pairs of the key, in key order; values as they appear in the key.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> shape_fields(const ShapeKey& shape);

/// FLOP of one call under the simulator's convention (the peer's, so efficiencies transfer):
/// GEMM 2*b*m*n*k; grouped 2*ng*M*N*K; SDPA fwd 2*B*S^2*max(h,h_kv)*(d_qk+d_v), bwd 2.5x fwd.
/// No causal halving. `op` selects fwd/bwd for SDPA.
[[nodiscard]] double shape_flops(const std::string& op, const ShapeKey& shape);

/// Layout, dtype and stage fields of packed keys (the text values of the peer's keys).
enum class KeyLayout : uint8_t { TN, NN, NT };
enum class KeyDtype : uint8_t { bf16, fp16, fp32, fp8 };
enum class KeyStage : uint8_t { fwd, bwd_grad_act, bwd_grad_w };
enum class KeyKind : uint8_t { None, Matmul, Grouped, Sdpa };

/// A shape key as plain data: what a kernel looks up on every estimate, hashed and compared by
/// value instead of as text. Numeric fields hold the value the key prints (see pack_value), so
/// two keys are equal exactly when their texts are; `format_packed_key` gives the text.
struct PackedKey {
  double num[6] = {};    // numeric fields in key order (matmul 4, grouped 4, SDPA 6)
  KeyKind kind = KeyKind::None;
  uint8_t choice[4] = {};  // layout / dtype / stage fields in key order, as their enum values
  uint8_t flags = 0;       // boolean fields in key order, bit i = field i
  uint8_t pad[2] = {};     // keeps every byte defined: keys compare and hash as raw words

  [[nodiscard]] bool empty() const { return kind == KeyKind::None; }
  // Inline word compares and hashing: every kernel of an estimate looks its key up.
  friend bool operator==(const PackedKey& a, const PackedKey& b) {
    uint64_t x[7], y[7];
    std::memcpy(x, &a, sizeof x);
    std::memcpy(y, &b, sizeof y);
    uint64_t diff = 0;
    for (int i = 0; i < 7; ++i) diff |= x[i] ^ y[i];
    return diff == 0;
  }
};
static_assert(sizeof(PackedKey) == 56, "no padding: keys compare and hash as raw words");

struct PackedKeyHash {
  size_t operator()(const PackedKey& k) const {
    uint64_t words[sizeof(PackedKey) / 8];
    std::memcpy(words, &k, sizeof k);
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint64_t w : words) {
      h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    return static_cast<size_t>(h);
  }
};

/// Dense GEMM key (`b, m, k, n, layout, accumulate, out_dtype`).
[[nodiscard]] PackedKey matmul_key(double b, double m, double k, double n, KeyLayout layout,
                                   bool accumulate, KeyDtype out_dtype);
/// Grouped GEMM key (`ng, M, N, K, dtype, out_dtype, main_grad_dtype, stage, grad, accumulate,
/// use_split_accumulator, single_output`).
[[nodiscard]] PackedKey grouped_key(double ng, double m, double n, double k, KeyDtype dtype,
                                    KeyDtype out_dtype, KeyDtype main_grad_dtype, KeyStage stage,
                                    bool grad, bool accumulate, bool use_split_accumulator,
                                    bool single_output);
/// Fused attention key (`batch, seq_len, head_num, kv_head_num, qk_head_dim, v_head_dim,
/// qkv_contiguous`).
[[nodiscard]] PackedKey sdpa_key(double batch, double seq_len, double head_num, double kv_head_num,
                                 double qk_head_dim, double v_head_dim, bool qkv_contiguous);

/// The key text: integral values as Python ints, others as printf `%.0f` (round half to even),
/// booleans as True/False. "" for an empty key.
[[nodiscard]] std::string format_packed_key(const PackedKey& key);

/// The packed key whose text is exactly `text` (any kind, any values the text can print), or
/// nullopt when no packed key prints it (such a table entry is never looked up by a kernel).
[[nodiscard]] std::optional<PackedKey> pack_shape_key(std::string_view text);

}  // namespace trainsim
