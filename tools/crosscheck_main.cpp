// calib_crosscheck: compares our kernels_bench / comm_bench results with published
// measurements in the same format and reports the per-entry ratio and the 5 % acceptance.
#include <charconv>
#include <cstdio>
#include <exception>

#include "cli/args.h"
#include "config/presets.h"
#include "core/error.h"
#include "crosscheck.h"

namespace {

double number_option(const trainsim::cli::ArgParser& p, const std::string& name, double fallback) {
  if (!p.has(name)) return fallback;
  const std::string v = p.get(name);
  double out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || !(out >= 0))
    throw trainsim::UsageError("--" + name + ": expected a number ≥ 0, got '" + v + "'");
  return out;
}

int run(const std::vector<std::string>& args) {
  trainsim::cli::ArgParser p("calib_crosscheck",
                             "calib_crosscheck OURS.json PUBLISHED.json [--tolerance 0.05] [--min-bytes N] [--check]");
  p.positional("OURS.json", "our kernels.json or comm.json");
  p.positional("PUBLISHED.json", "published measurements of the same GPU in the same format");
  p.option("tolerance", "accepted relative difference of the times (default 0.05)");
  p.option("min-bytes", "comm.json only: leave out sizes below this (latency-bound; default 0)");
  p.flag("check", "exit with status 1 when the acceptance fails");
  if (!p.parse(args)) return 0;
  if (p.positionals().size() != 2)
    throw trainsim::UsageError("expected two result files (ours, then published)\n" + p.help());
  const std::string ours = p.positionals()[0], pub = p.positionals()[1];
  trainsim::tools::CrossReport r =
      trainsim::tools::cross_check(trainsim::read_file(ours), ours, trainsim::read_file(pub), pub,
                                   number_option(p, "tolerance", 0.05), number_option(p, "min-bytes", 0));
  std::fputs(trainsim::tools::format_report(r).c_str(), stdout);
  return p.has("check") && !r.accepted() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const trainsim::UsageError& e) {
    std::fprintf(stderr, "calib_crosscheck: usage error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calib_crosscheck: error: %s\n", e.what());
    return 1;
  }
}
