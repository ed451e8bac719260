// `trainsim system`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_system(const Args&) { throw Error("'system' is not implemented yet"); }

}  // namespace trainsim::cli
