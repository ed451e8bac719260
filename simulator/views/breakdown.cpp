// Op and layer-type breakdowns: sums of the estimate's op costs, nothing recomputed.
#include "views/breakdown.h"

#include "core/enum_table.h"
#include <algorithm>
#include <string_view>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

namespace {

// Adds `n` micro-batches of one op to a row; efficiencies are averaged by FLOPs. `instance`:
// the op starts a new instance of what the row counts (an op, or a layer).
void add(BreakdownRow& row, const OpCost& o, double n, bool instance) {
  const double flops = (o.fwd_flops + o.bwd_flops) * n;
  const double before = row.fwd_bwd_flops;
  if (before + flops > 0) row.efficiency = (row.efficiency * before + o.efficiency * flops) / (before + flops);
  row.source = row.instances == 0 ? o.source : std::max(row.source, o.source);
  row.measured = row.instances == 0 ? o.measured : row.measured && o.measured;
  row.instances += instance ? 1 : 0;
  row.fwd_s += o.fwd_s * n;
  row.bwd_s += o.bwd_s * n;
  row.recompute_s += o.recompute_s * n;
  row.comm_s += (o.fwd_comm_s + o.bwd_comm_s + o.recompute_comm_s) * n;
  row.flops += (o.fwd_flops + o.bwd_flops + o.recompute_flops) * n;
  row.bytes += o.bytes * n;
  row.fwd_bwd_flops += flops;
}

BreakdownRow& row_for(std::vector<BreakdownRow>& rows, std::string_view type, std::string_view op) {
  for (auto& r : rows)
    if (r.layer_type == type && r.op == op) return r;
  rows.push_back({});
  rows.back().layer_type = type;
  rows.back().op = op;
  return rows.back();
}

}  // namespace

std::vector<StageBreakdown> stage_breakdowns(const Estimate& e) {
  std::vector<StageBreakdown> out;
  const auto mbs = static_cast<double>(e.micro_batches);
  for (size_t r = 0; r < e.ranks.size(); ++r) {
    StageBreakdown b;
    b.rank = static_cast<int32_t>(r);
    for (const auto& chunk : e.ranks[r].chunks)
      for (size_t i = 0; i < chunk.size(); ++i) {
        const OpCost& o = chunk[i];
        const bool new_layer = i == 0 || chunk[i - 1].layer != o.layer ||
                               std::string_view(chunk[i - 1].layer_type) != o.layer_type;
        add(row_for(b.by_layer_type, o.layer_type, ""), o, mbs, new_layer);
        add(row_for(b.by_op, o.layer_type, o.name), o, mbs, true);
      }
    std::stable_sort(b.by_op.begin(), b.by_op.end(), [](const auto& x, const auto& y) { return x.total_s() > y.total_s(); });
    out.push_back(std::move(b));
  }
  return out;
}

BreakdownLevel parse_breakdown_level(const std::string& value, const std::string& flag) {
  static constexpr EnumTable<BreakdownLevel, 2> kLevels(
      "level", {{{BreakdownLevel::Layer, "layer"}, {BreakdownLevel::Op, "op"}}});
  return kLevels.parse<UsageError>(value, flag + ": ");
}

std::string breakdown_csv(const Estimate& e, BreakdownLevel level) {
  std::string o = "stage,layer_type,op,count,fwd_ms,bwd_ms,recompute_ms,comm_ms,total_ms,tflop,gb,efficiency,"
                  "efficiency_source\n";
  for (const StageBreakdown& b : stage_breakdowns(e))
    for (const BreakdownRow& r : level == BreakdownLevel::Layer ? b.by_layer_type : b.by_op)
      o += strprintf("%d,%s,%s,%lld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.4f,%s\n", b.rank, csv_escape(r.layer_type).c_str(),
                     csv_escape(r.op).c_str(), static_cast<long long>(r.instances), r.fwd_s * 1e3, r.bwd_s * 1e3,
                     r.recompute_s * 1e3, r.comm_s * 1e3, r.total_s() * 1e3, r.flops / 1e12, r.bytes / 1e9,
                     r.efficiency, efficiency_label(r.measured, r.source));
  return o;
}

std::string breakdown_table(const Estimate& e, BreakdownLevel level) {
  std::string o = level == BreakdownLevel::Layer ? "\ntime by layer type (ms per iteration)\n" : "\ntime by op (ms per iteration)\n";
  o += "  stage  layer type   op                     count      fwd      bwd  recomp     comm   TFLOP      GB   eff  source\n";
  for (const StageBreakdown& b : stage_breakdowns(e))
    for (const BreakdownRow& r : level == BreakdownLevel::Layer ? b.by_layer_type : b.by_op)
      o += strprintf("  %5d  %-12s %-22s %5lld %8.1f %8.1f %7.1f %8.1f %7.1f %7.1f %5.2f  %s\n", b.rank,
                     r.layer_type.c_str(), r.op.empty() ? "-" : r.op.c_str(), static_cast<long long>(r.instances),
                     r.fwd_s * 1e3, r.bwd_s * 1e3, r.recompute_s * 1e3, r.comm_s * 1e3, r.flops / 1e12, r.bytes / 1e9,
                     r.efficiency, efficiency_label(r.measured, r.source));
  return o;
}

}  // namespace trainsim
