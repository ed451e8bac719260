// The process world: MPI when built with it (and launched under mpirun/srun), else one process.
#pragma once

#include <string>
#include <vector>

namespace comm_bench {

class World {
 public:
  /// Initialises MPI when available, discovers rank, local rank (MPI_COMM_TYPE_SHARED) and
  /// host, and fills rank_context().
  World(int* argc, char*** argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int local_rank() const { return local_rank_; }
  [[nodiscard]] int local_size() const { return local_size_; }
  [[nodiscard]] const std::string& host() const { return host_; }

  /// Host name of every rank (rank order).
  [[nodiscard]] std::vector<std::string> all_hosts() const;
  /// Gathers one string per rank (each at most 255 bytes).
  [[nodiscard]] std::vector<std::string> all_gather(const std::string& s) const;
  void broadcast(void* data, int bytes, int root) const;
  [[nodiscard]] double max(double v) const;
  [[nodiscard]] double min(double v) const;
  [[nodiscard]] long long sum(long long v) const;
  void barrier() const;
  /// Ends every rank at once (MPI_Abort) so that none waits forever on a failed peer.
  [[noreturn]] void abort(int code) const;
  /// MPI library version, or "" without MPI.
  [[nodiscard]] std::string mpi_version() const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  bool mpi_ = false;
};

}  // namespace comm_bench
