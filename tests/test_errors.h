// The message of the error a test expects, for exact-message assertions.
#pragma once

#include <string>

#include "core/error.h"

namespace trainsim::test {

/// What error_of returns when `fn` throws nothing.
inline const std::string kNoError = "<no error>";

/// The message of the `E` that `fn` throws, or kNoError.
template <class E = ConfigError, class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return kNoError;
}

}  // namespace trainsim::test
