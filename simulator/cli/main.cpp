// `trainsim` entry point: dispatches subcommands; the only place that catches errors.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const trainsim::cli::Args&);
  const char* help;
};

const Command kCommands[] = {
    {"perf", trainsim::cli::cmd_perf, "predict step time, MFU and memory of one plan"},
    {"batch", trainsim::cli::cmd_batch, "evaluate every case of a directory into a CSV"},
    {"search", trainsim::cli::cmd_search, "find the fastest strategies that fit in memory"},
    {"validate", trainsim::cli::cmd_validate, "compare predictions with real measurements"},
    {"shapes", trainsim::cli::cmd_shapes, "list the efficiency-table keys a plan looks up"},
    {"system", trainsim::cli::cmd_system, "system build: merge measurements into a system file"},
    {"presets", trainsim::cli::cmd_presets, "list the embedded model/strategy/system presets"},
    {"import", trainsim::cli::cmd_import, "write model/strategy JSON from a Hugging Face config or Megatron-LM command line"},
    {"sweep", trainsim::cli::cmd_sweep, "one plan over the values of one or two keys (hardware what-ifs): table, CSV, chart"},
    {"serve", trainsim::cli::cmd_serve, "local web app: edit a plan and see the prediction and plots live"},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: trainsim <command> [options]   (trainsim <command> --help)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.help);
  std::fprintf(out, "\n  --version  print the version\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    std::printf("trainsim %s\n", TRAINSIM_VERSION);
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  trainsim::cli::Args args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (cmd != c.name) continue;
    try {
      const int rc = c.run(args);
      // stdout is an output like any other: a full disk or closed pipe must not exit 0.
      if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw trainsim::Error(std::string("standard output: cannot write: ") + std::strerror(errno));
      return rc;
    } catch (const trainsim::UsageError& e) {
      std::fprintf(stderr, "trainsim %s: usage error: %s\n", c.name, e.what());
      return 2;
    } catch (const trainsim::Error& e) {
      std::fprintf(stderr, "trainsim %s: error: %s\n", c.name, e.what());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainsim %s: internal error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "trainsim: unknown command '%s'\n", cmd.c_str());
  usage(stderr);
  return 2;
}
