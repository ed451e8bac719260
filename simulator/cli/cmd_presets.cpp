// `trainsim presets`.
#include "cli/commands.h"
#include "core/error.h"

namespace trainsim::cli {

int cmd_presets(const Args&) { throw Error("'presets' is not implemented yet"); }

}  // namespace trainsim::cli
