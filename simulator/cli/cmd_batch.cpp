// `trainsim batch DIR --system Y --csv OUT.csv`: every DIR/<case>/{model,strategy}.json (or
// megatron_args.txt, with an optional config.json) in one process. A failing case records its
// error in the CSV; the batch stops there and exits 1, or with --keep-going goes on and exits 0
// when at least one case succeeded.
#include <cstdio>
#include <string>

#include "cli/cli_app.h"
#include "cli/commands.h"
#include "inputs/output_file.h"
#include "cli/batch.h"

namespace trainsim::cli {

int cmd_batch(const Args& args) {
  CLI::App app("Evaluate every case of a directory into a CSV.", "trainsim batch");
  std::string dir, system_arg, csv, match;
  app.add_option("DIR", dir, "directory of cases: DIR/<case>/{model,strategy}.json, or "
                             "DIR/<case>/megatron_args.txt with an optional config.json")->required();
  app.add_option("--system", system_arg, "system preset or file used for every case")->required();
  app.add_option("--csv", csv, "write the results here (default: stdout)");
  app.add_option("--match", match, "only cases whose name contains TEXT");
  bool keep_going = false;
  app.add_flag("--keep-going", keep_going, "go on after a failing case; exit 0 when at least one case succeeded");
  std::string compat;
  add_compat_option(app, compat);
  if (!parse_args(app, "batch", args)) return 0;
  const Mode mode = compat_mode(compat, "batch");
  BatchOptions o;
  o.dir = dir;
  o.system = system_arg;
  o.match = match;
  o.keep_going = keep_going;
  o.mode = mode;
  const BatchRun b = prepare_batch(o);
  // A CSV file appears (atomically) at the end.
  OutputFile out(csv.empty() ? "-" : csv);
  const BatchSummary s = run_batch(b, [&](const std::string& text) { out.write(text); },
                                   [](const std::string& line) { std::fputs(line.c_str(), stderr); });
  out.commit();
  std::fputs(batch_summary_line(s).c_str(), stderr);
  if (s.failed == 0) return 0;
  return keep_going && s.ran > static_cast<size_t>(s.failed) ? 0 : 1;
}

}  // namespace trainsim::cli
