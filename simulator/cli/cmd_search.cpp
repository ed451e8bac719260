// `trainsim search`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_search(const Args&) { throw Error("'search' is not implemented yet"); }

}  // namespace trainsim::cli
