// Error checks for CUDA, NCCL and MPI calls: the message names host, rank, local rank and call.
#pragma once

#include <string>

#include "core/error.h"

namespace comm_bench {

/// Identity of this process, set once after rank discovery.
struct RankContext {
  std::string host = "?";
  int rank = 0;
  int local_rank = 0;
};
[[nodiscard]] RankContext& rank_context();

/// A failed library call or a timed-out collective on this rank.
class RankError : public trainsim::Error {
 public:
  using trainsim::Error::Error;
};

/// "host1 rank 3 (local 1): NCCL error 'unhandled cuda error' in ncclAllReduce(...) at f.cpp:12".
[[nodiscard]] std::string rank_message(const std::string& what);
[[noreturn]] void check_failed(const char* library, const char* call, const std::string& error, const char* file,
                               int line);

}  // namespace comm_bench

#define CB_CUDA_CHECK(call)                                                                     \
  do {                                                                                          \
    const cudaError_t cb_e_ = (call);                                                           \
    if (cb_e_ != cudaSuccess)                                                                   \
      ::comm_bench::check_failed("CUDA", #call, cudaGetErrorString(cb_e_), __FILE__, __LINE__); \
  } while (0)

#define CB_NCCL_CHECK(call)                                                                     \
  do {                                                                                          \
    const ncclResult_t cb_r_ = (call);                                                          \
    if (cb_r_ != ncclSuccess)                                                                   \
      ::comm_bench::check_failed("NCCL", #call, ncclGetErrorString(cb_r_), __FILE__, __LINE__); \
  } while (0)

#define CB_MPI_CHECK(call)                                                                  \
  do {                                                                                      \
    const int cb_m_ = (call);                                                               \
    if (cb_m_ != MPI_SUCCESS) {                                                             \
      char cb_s_[MPI_MAX_ERROR_STRING];                                                     \
      int cb_n_ = 0;                                                                        \
      MPI_Error_string(cb_m_, cb_s_, &cb_n_);                                               \
      ::comm_bench::check_failed("MPI", #call, std::string(cb_s_, cb_n_), __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)
