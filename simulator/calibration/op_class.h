// The compute op classes of an accelerator (`accelerator.op.<name>` in system files): one table
// row per class says its name, the family of kernels it times, the kind of its shape keys and
// when a plan needs it. The simulator's op builders, shape keys, efficiency lookups and plan
// checks, kernels_bench and the tools (`trainsim system --op-classes`) all read this table.
//
// A new op class is one row here (plus the kernels that use it and its shape-key format when it
// brings a new key kind); docs/architecture.md says what else it touches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "calibration/shape_key.h"
#include "core/enum_table.h"

namespace trainsim {

/// A compute op class, in table order (kOpClassRows).
enum class OpClass : uint8_t { Default, Matmul, Fp8Matmul, GroupMatmul, Fp8GroupMatmul, SdpFwd, SdpBwd };

/// The kernels a class times.
enum class OpFamily : uint8_t {
  Fallback,     // every kernel without a class of its own (norms, activations, softmax, ...)
  Gemm,         // dense GEMMs (Linear layers, router, output layer)
  GroupedGemm,  // MoE grouped GEMMs (TE GroupedLinear)
  Attention,    // fused attention (flash / cuDNN SDPA)
};

/// When a plan needs the class's efficiency (plan/validate.cpp checks it is measured or has a
/// fallback > 0 in the system).
enum class OpNeed : uint8_t {
  Always,   // every plan (matmul: the output layer's GEMM stays in bf16 under fp8)
  Fp8,      // plans with fp8 on
  MoeBf16,  // MoE plans without fp8
  MoeFp8,   // MoE plans with fp8
};

struct OpClassRow {
  OpClass cls;
  std::string_view name;  // the system file's key (accelerator.op.<name>)
  OpFamily family;
  KeyKind key;            // the kind of its shape keys (None: the class has none)
  bool fp8;               // its kernels read fp8 inputs (timed against the fp8 peak)
  bool backward;          // attention backward (2.5× the forward's FLOPs per key)
  OpNeed need;
};

inline constexpr OpClassRow kOpClassRows[] = {
    {OpClass::Default, "default", OpFamily::Fallback, KeyKind::None, false, false, OpNeed::Always},
    {OpClass::Matmul, "matmul", OpFamily::Gemm, KeyKind::Matmul, false, false, OpNeed::Always},
    {OpClass::Fp8Matmul, "fp8_matmul", OpFamily::Gemm, KeyKind::Matmul, true, false, OpNeed::Fp8},
    {OpClass::GroupMatmul, "group_matmul", OpFamily::GroupedGemm, KeyKind::Grouped, false, false, OpNeed::MoeBf16},
    {OpClass::Fp8GroupMatmul, "fp8_group_matmul", OpFamily::GroupedGemm, KeyKind::Grouped, true, false,
     OpNeed::MoeFp8},
    {OpClass::SdpFwd, "sdp_fwd", OpFamily::Attention, KeyKind::Sdpa, false, false, OpNeed::Always},
    {OpClass::SdpBwd, "sdp_bwd", OpFamily::Attention, KeyKind::Sdpa, false, true, OpNeed::Always},
};
inline constexpr size_t kOpClassCount = std::size(kOpClassRows);

/// The position of `c` in the table (rows are in enum order).
[[nodiscard]] constexpr size_t op_index(OpClass c) { return static_cast<size_t>(c); }
/// The row of `c`.
[[nodiscard]] constexpr const OpClassRow& op_row(OpClass c) { return kOpClassRows[static_cast<size_t>(c)]; }
[[nodiscard]] constexpr std::string_view op_name(OpClass c) { return op_row(c).name; }
/// `op_name(c)` NUL-terminated (the table holds literals).
[[nodiscard]] constexpr const char* op_c_str(OpClass c) { return op_row(c).name.data(); }

namespace detail {
constexpr auto op_class_pairs() {
  std::array<std::pair<OpClass, std::string_view>, kOpClassCount> out{};
  for (size_t i = 0; i < kOpClassCount; ++i) out[i] = {kOpClassRows[i].cls, kOpClassRows[i].name};
  return out;
}
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < kOpClassCount; ++i)
    if (static_cast<size_t>(kOpClassRows[i].cls) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::rows_in_enum_order(), "kOpClassRows lists the classes in enum order");

/// Name ↔ class: parsing and the one message for an unknown name ("unknown op class 'x';
/// valid values: ...; did you mean ...?").
inline constexpr EnumTable<OpClass, kOpClassCount> kOpClasses("op class", detail::op_class_pairs());
/// The names in table order (system/system_config.h indexes a system's classes by them). A plain
/// array, not a std::array: it is a template argument there, which clang does not take as a
/// pointer into a subobject.
inline constexpr std::string_view kOpClassNames[] = {op_name(OpClass::Default),     op_name(OpClass::Matmul),
                                                     op_name(OpClass::Fp8Matmul),   op_name(OpClass::GroupMatmul),
                                                     op_name(OpClass::Fp8GroupMatmul), op_name(OpClass::SdpFwd),
                                                     op_name(OpClass::SdpBwd)};
namespace detail {
constexpr bool names_in_table_order() {
  if (std::size(kOpClassNames) != kOpClassCount) return false;
  for (size_t i = 0; i < kOpClassCount; ++i)
    if (kOpClassNames[i] != kOpClassRows[i].name) return false;
  return true;
}
}  // namespace detail
static_assert(detail::names_in_table_order(), "kOpClassNames lists every class of kOpClassRows in order");

/// The class named `name`, if any.
[[nodiscard]] constexpr std::optional<OpClass> find_op_class(std::string_view name) { return kOpClasses.find(name); }

/// Whether a plan with `fp8` on and (`moe`) MoE layers needs class `c`'s efficiency.
[[nodiscard]] constexpr bool op_needed(OpClass c, bool fp8, bool moe) {
  switch (op_row(c).need) {
    case OpNeed::Always: return true;
    case OpNeed::Fp8: return fp8;
    case OpNeed::MoeBf16: return moe && !fp8;
    case OpNeed::MoeFp8: return moe && fp8;
  }
  return true;
}

/// Names for printing the table (`trainsim system --op-classes`).
inline constexpr EnumTable<OpFamily, 4> kOpFamilies(
    "op family", {{{OpFamily::Fallback, "fallback"},
                   {OpFamily::Gemm, "gemm"},
                   {OpFamily::GroupedGemm, "grouped_gemm"},
                   {OpFamily::Attention, "attention"}}});
inline constexpr EnumTable<OpNeed, 4> kOpNeeds(
    "op need", {{{OpNeed::Always, "always"}, {OpNeed::Fp8, "fp8"}, {OpNeed::MoeBf16, "moe_bf16"},
                 {OpNeed::MoeFp8, "moe_fp8"}}});

}  // namespace trainsim
