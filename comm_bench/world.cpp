// Process world over MPI (COMM_BENCH_HAVE_MPI) or a single process.
#include "world.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#ifdef COMM_BENCH_HAVE_MPI
#include <mpi.h>
#endif

#include "checks.h"

namespace comm_bench {

namespace {
std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}
constexpr int kSlot = 256;
}  // namespace

World::World([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) : host_(hostname()) {
#ifdef COMM_BENCH_HAVE_MPI
  CB_MPI_CHECK(MPI_Init(argc, argv));
  mpi_ = true;
  // Errors come back as codes and go through CB_MPI_CHECK rather than MPI's default abort.
  CB_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  CB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  CB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  rank_context().rank = rank_;
  MPI_Comm local;
  CB_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  CB_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  CB_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  CB_MPI_CHECK(MPI_Comm_free(&local));
#endif
  rank_context().host = host_;
  rank_context().rank = rank_;
  rank_context().local_rank = local_rank_;
}

World::~World() {
#ifdef COMM_BENCH_HAVE_MPI
  if (mpi_) MPI_Finalize();
#endif
}

std::vector<std::string> World::all_gather(const std::string& s) const {
#ifdef COMM_BENCH_HAVE_MPI
  std::vector<char> mine(kSlot, '\0'), all(static_cast<size_t>(kSlot) * static_cast<size_t>(size_));
  std::memcpy(mine.data(), s.data(), std::min<size_t>(s.size(), kSlot - 1));
  CB_MPI_CHECK(MPI_Allgather(mine.data(), kSlot, MPI_CHAR, all.data(), kSlot, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * kSlot);
  return out;
#else
  (void)kSlot;
  return {s};
#endif
}

std::vector<std::string> World::all_hosts() const { return all_gather(host_); }

void World::broadcast([[maybe_unused]] void* data, [[maybe_unused]] int bytes, [[maybe_unused]] int root) const {
#ifdef COMM_BENCH_HAVE_MPI
  CB_MPI_CHECK(MPI_Bcast(data, bytes, MPI_BYTE, root, MPI_COMM_WORLD));
#endif
}

double World::max(double v) const {
#ifdef COMM_BENCH_HAVE_MPI
  double out = 0;
  CB_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return out;
#else
  return v;
#endif
}

double World::min(double v) const {
#ifdef COMM_BENCH_HAVE_MPI
  double out = 0;
  CB_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
  return out;
#else
  return v;
#endif
}

long long World::sum(long long v) const {
#ifdef COMM_BENCH_HAVE_MPI
  long long out = 0;
  CB_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return out;
#else
  return v;
#endif
}

void World::barrier() const {
#ifdef COMM_BENCH_HAVE_MPI
  CB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
#endif
}

void World::abort(int code) const {
#ifdef COMM_BENCH_HAVE_MPI
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::exit(code);
}

std::string World::mpi_version() const {
#ifdef COMM_BENCH_HAVE_MPI
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(buf, &len) != MPI_SUCCESS) return "";
  std::string v(buf, static_cast<size_t>(len));
  if (const size_t nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
  return v;
#else
  return "";
#endif
}

}  // namespace comm_bench
