// Error checks.
#include "checks.h"

#include "core/text.h"

namespace comm_bench {

RankContext& rank_context() {
  static RankContext ctx;
  return ctx;
}

std::string rank_message(const std::string& what) {
  const RankContext& c = rank_context();
  return trainsim::strprintf("%s rank %d (local %d): %s", c.host.c_str(), c.rank, c.local_rank, what.c_str());
}

void check_failed(const char* library, const char* call, const std::string& error, const char* file, int line) {
  std::string f = file;
  if (const size_t slash = f.find_last_of('/'); slash != std::string::npos) f.erase(0, slash + 1);
  throw RankError(rank_message(trainsim::strprintf("%s error '%s' in %s at %s:%d", library, error.c_str(), call,
                                                   f.c_str(), line)));
}

}  // namespace comm_bench
