// `trainsim sweep`: one plan over the values of one or two keys (hardware what-ifs with system
// key paths, or model and strategy keys), as a table, a CSV and an HTML chart.
#include <cstdio>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "cli/plan_options.h"
#include "inputs/output_file.h"
#include "core/error.h"
#include "views/predict.h"
#include "views/sweep.h"

namespace trainsim::cli {

int cmd_sweep(const Args& args) {
  CLI::App app("Predict one plan over the values of one or two keys: model, strategy or system keys "
               "(dotted paths such as accelerator.mem_gbs), as --set takes them.",
               "trainsim sweep");
  PlanOptions po;
  add_plan_options(app, po);
  std::string system = kDefaultSystem, csv, html, compat;
  std::vector<std::string> vary;
  app.add_option("--system", system, std::string("system preset or JSON file (default ") + kDefaultSystem + ")");
  app.add_option("--vary", vary, "KEY=V1,V2,...: a key and its values (one or two --vary)")->required();
  app.add_option("--csv", csv, "write one row per combination to this CSV file");
  app.add_option("--html", html, "write an HTML chart: step time along one key, or a heat map of two");
  add_compat_option(app, compat);
  if (!parse_args(app, "sweep", args)) return 0;
  if (vary.size() > 2) throw UsageError("sweep: at most two --vary keys");
  std::vector<SweepAxis> axes;
  for (const auto& v : vary) axes.push_back(parse_sweep_axis(v));
  const bool own = !po.megatron_args.empty();
  const std::vector<SweepPoint> points = run_sweep(make_request(po), own ? "" : kDefaultModel, kDefaultStrategy,
                                                   resolve_config("system", system), compat_mode(compat, "sweep"),
                                                   axes);
  std::fputs(sweep_table(axes, points).c_str(), stdout);
  if (!csv.empty()) write_file_atomic(csv, sweep_csv(axes, points));
  std::string title = "trainsim sweep: " + axes[0].key;
  if (axes.size() > 1) title += " × " + axes[1].key;
  if (!html.empty()) write_file_atomic(html, sweep_html(axes, points, title));
  return 0;
}

}  // namespace trainsim::cli
