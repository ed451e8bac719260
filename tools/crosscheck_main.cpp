// calib_crosscheck: compares our kernels_bench / comm_bench results with published
// measurements in the same format and reports the per-entry ratio and the 5 % acceptance.
#include <cstdio>
#include <exception>

#include "cli/cli_app.h"
#include "system/presets.h"
#include "core/error.h"
#include "crosscheck.h"

namespace {

int run(const std::vector<std::string>& args) {
  CLI::App app("Compare our kernels.json / comm.json with published measurements of the same GPU.",
               "calib_crosscheck");
  std::string ours, pub;
  double tolerance = 0.05, min_bytes = 0;
  bool check = false;
  app.add_option("OURS.json", ours, "our kernels.json or comm.json")->required();
  app.add_option("PUBLISHED.json", pub, "published measurements of the same GPU in the same format")->required();
  app.add_option("--tolerance", tolerance, "accepted relative difference of the times (default 0.05)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-bytes", min_bytes, "comm.json only: leave out sizes below this (latency-bound; default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--check", check, "exit with status 1 when the acceptance fails");
  if (!trainsim::cli::parse_args(app, "calib_crosscheck", args)) return 0;
  trainsim::tools::CrossReport r = trainsim::tools::cross_check(trainsim::read_file(ours), ours,
                                                                trainsim::read_file(pub), pub, tolerance, min_bytes);
  std::fputs(trainsim::tools::format_report(r).c_str(), stdout);
  return check && !r.accepted() ? 1 : 0;
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
