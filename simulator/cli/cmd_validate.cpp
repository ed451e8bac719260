// `trainsim validate`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_validate(const Args&) { throw Error("'validate' is not implemented yet"); }

}  // namespace trainsim::cli
