#include "tessera/parallel/environment.hpp"

#include <dlfcn.h>
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <thread>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::parallel {

bool limit_blas_threads(int threads) {
  bool found = false;
  for (const char* name : {"openblas_set_num_threads", "MKL_Set_Num_Threads"})
    if (void* symbol = dlsym(RTLD_DEFAULT, name)) {
      reinterpret_cast<void (*)(int)>(symbol)(threads);
      found = true;
    }
  return found;
}

std::string foreign_launcher(int world_size,
                             const std::function<const char*(const char*)>& getenv) {
  if (world_size != 1) return "";
  // What launchers tell the processes they start: OpenMPI's, and the PMI of MPICH's Hydra or
  // Slurm's srun.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = getenv(name);
    if (!value) continue;
    const int count = std::atoi(value);
    if (count <= 1) continue;
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(library, &length);
    std::string built(library, static_cast<std::size_t>(length));
    built = built.substr(0, built.find_first_of("\n,"));
    return "the launcher started " + std::to_string(count) + " processes (" + name + "=" + value +
           "), but each runs alone: this tessera was built with " + built +
           ", and a launcher of another MPI library cannot join its processes into one job; "
           "start it with the launcher of that MPI (mpiexec.mpich for Debian's MPICH, or srun "
           "with its --mpi plugin)";
  }
  return "";
}

Environment::Environment(int* argc, char*** argv) {
  // LibTorch's large temporaries would otherwise go back to the kernel every iteration and
  // come back as page faults, which then dominate the iteration time (docs/benchmarks.md,
  // "Malloc thresholds").
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  // Ranks that share the cores slow each other down when each runs several intra-op threads
  // (docs/benchmarks.md, "One intra-op thread per rank"): one intra-op thread per rank unless
  // the user says otherwise.
  int threads = 1;
  if (const char* env = std::getenv("TESSERA_THREADS")) threads = std::max(1, std::atoi(env));
  torch::set_num_threads(threads);
  limit_blas_threads(threads);
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void Environment::abort_job(const std::string& message, int code) {
  int rank = 0, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size = 1;
  if (initialized) MPI_Comm_size(MPI_COMM_WORLD, &size);
  // One write of the whole line, so messages of several failing ranks do not interleave.
  const std::string line = "tessera: error on rank " + std::to_string(rank) + ": " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  // One process: finish cleanly (MPI_Abort would add MPICH's own noise to a user error).
  if (initialized && size > 1) {
    // MPICH's launcher forwards a rank's stderr through its proxy, and MPI_Abort tears the
    // proxies down at once: with the cores busy, the line written just above was sometimes lost
    // (the user saw only "exit status 1"; docs/benchmarks.md, "Wait before MPI_Abort"). Half a
    // second lets it through; it is paid only on the way out of a failed job.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  if (initialized) MPI_Finalize();
  std::exit(code);
}

int Communicator::rank() const {
  int r = 0;
  MPI_Comm_rank(comm_, &r);
  return r;
}

int Communicator::size() const {
  int s = 1;
  MPI_Comm_size(comm_, &s);
  return s;
}

void Communicator::sum_in_place(std::vector<double>& values) const {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                comm_);
}

void Communicator::max_in_place(std::vector<double>& values) const {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX,
                comm_);
}

std::vector<std::string> Communicator::gather_to_root(const std::string& text) const {
  const int ranks = size();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank() == 0 ? ranks : 0), offsets(lengths.size(), 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, comm_);
  std::vector<std::string> result;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    result.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return result;
}

std::string Communicator::all_gather(const std::string& bytes) const {
  const int ranks = size();
  TESSERA_CHECK(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                "a message of " << bytes.size() << " bytes is more than MPI counts in one call");
  int length = static_cast<int>(bytes.size());
  std::vector<int> lengths(static_cast<std::size_t>(ranks)), offsets(lengths.size(), 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_);
  int64_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    offsets[r] = static_cast<int>(total), total += lengths[r];
  TESSERA_CHECK(total <= std::numeric_limits<int>::max(),
                "gathering " << total << " bytes is more than MPI counts in one call");
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(bytes.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(),
                 MPI_BYTE, comm_);
  return all;
}

std::string Communicator::broadcast_from_root(const std::string& text) const {
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm_);
  std::string result = rank() == 0 ? text : std::string(static_cast<std::size_t>(length), '\0');
  MPI_Bcast(result.data(), length, MPI_CHAR, 0, comm_);
  return result;
}

bool Communicator::any(bool flag) const {
  int local = flag ? 1 : 0, global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LOR, comm_);
  return global != 0;
}

void Communicator::barrier() const { MPI_Barrier(comm_); }

namespace {

/// Frees a communicator made by MPI_Comm_split, unless MPI has already been finalised.
struct CommunicatorOwner {
  explicit CommunicatorOwner(MPI_Comm c) : comm(c) {}
  CommunicatorOwner(const CommunicatorOwner&) = delete;
  CommunicatorOwner& operator=(const CommunicatorOwner&) = delete;
  MPI_Comm comm;
  ~CommunicatorOwner() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm);
  }
};

}  // namespace

Communicator Communicator::split(int color, int key) const {
  MPI_Comm part = MPI_COMM_NULL;
  MPI_Comm_split(comm_, color, key, &part);
  Communicator out(part);
  out.owner_ = std::make_shared<const CommunicatorOwner>(part);
  return out;
}

MpiVersion mpi_version() {
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  std::string text(library, static_cast<std::size_t>(length));
  return {std::to_string(major) + "." + std::to_string(minor), text.substr(0, text.find('\n'))};
}

bool is_root() {
  int initialized = 0, rank = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

}  // namespace tessera::parallel
