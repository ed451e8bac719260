// `trainsim shapes`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_shapes(const Args&) { throw Error("'shapes' is not implemented yet"); }

}  // namespace trainsim::cli
