// `trainsim perf`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_perf(const Args&) { throw Error("'perf' is not implemented yet"); }

}  // namespace trainsim::cli
