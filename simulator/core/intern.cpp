#include "core/intern.h"

#include <mutex>
#include <set>
#include <string>

namespace trainsim {

std::string_view intern(std::string_view text) {
  // Node-based: inserting never moves a stored string (nor its inline characters).
  static std::mutex mu;
  static std::set<std::string, std::less<>> pool;
  std::lock_guard lock(mu);
  auto it = pool.find(text);
  if (it == pool.end()) it = pool.emplace(text).first;
  return *it;
}

}  // namespace trainsim
