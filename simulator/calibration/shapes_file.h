// shapes.json: the shape keys a set of plans looks up (written by `trainsim shapes`, read by
// kernels_bench).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/shape_key.h"

namespace trainsim {

inline constexpr const char* kShapesSchemaVersion = "1.0.0";

/// One (op, key) a plan evaluates.
struct ShapeEntry {
  std::string op;                // accelerator op class (matmul, group_matmul, sdp_fwd, ...)
  std::string key;               // exact lookup key
  ShapeKey shape;                // parsed from `key`
  double flops = 0;              // FLOP of one call (simulator convention)
  int64_t count = 0;             // calls per micro-batch, summed over the plans using it
  std::optional<bool> in_system; // measured in the --system file, or answered by its model (absent: no system given)
  std::vector<int64_t> plans;    // indices into ShapesDoc::plans
};

/// A (model, strategy) pair the shapes were listed for.
struct ShapePlan {
  std::string model, strategy;
};

struct ShapesDoc {
  std::string schema_version = kShapesSchemaVersion;
  std::string system;            // sys_name of --system, "" when none was given
  std::vector<ShapePlan> plans;
  std::vector<ShapeEntry> shapes;
  std::string provenance_json;   // JSON object text, "" when absent
};

/// Serializes (schema in docs/kernels-bench.md), with a structured `shape` object per entry.
[[nodiscard]] std::string shapes_to_json_text(const ShapesDoc& doc);

/// Parses strictly: unknown keys, bad shape keys, duplicates and an incompatible
/// schema_version are reported together in one ConfigError naming `source` and JSON paths.
/// A missing `flops` is computed from the key.
[[nodiscard]] ShapesDoc load_shapes(const std::string& text, const std::string& source);

}  // namespace trainsim
