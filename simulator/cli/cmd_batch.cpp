// `trainsim batch`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_batch(const Args&) { throw Error("'batch' is not implemented yet"); }

}  // namespace trainsim::cli
