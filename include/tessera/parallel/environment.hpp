#pragma once
/// The MPI environment and the communicator wrapper. Only this module includes <mpi.h>
/// directly; io's parallel HDF5 gets the raw handle through Communicator::native().
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera::parallel {

/// Gives the BLAS library that LibTorch calls (OpenBLAS or MKL, found at run time; nothing for
/// another) `threads` threads instead of its default of one per core, which ranks sharing the
/// cores would oversubscribe. Returns whether a library took the setting.
bool limit_blas_threads(int threads);

/// RAII: initialises MPI (also for one rank) and finalises it at scope exit. Also applies the
/// per-process settings: malloc thresholds and one intra-op thread per rank (LibTorch's and
/// the BLAS library's) unless TESSERA_THREADS says otherwise (docs/benchmarks.md, "Malloc
/// thresholds" and "One intra-op thread per rank"). Create exactly one, first thing in main.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  /// Ends the whole job (every rank) after printing "[rank r] message" to stderr.
  [[noreturn]] static void abort_job(const std::string& message, int code = 1);
};

/// "" unless this process is one of several that a launcher started while MPI says the job has
/// `world_size` == 1: the launcher of another MPI library (OpenMPI's mpiexec for an MPICH build,
/// or the reverse) starts every process as a job of its own. Then one line naming the launcher's
/// count and the fix. `getenv` reads the environment (a parameter for the tests).
std::string foreign_launcher(int world_size, const std::function<const char*(const char*)>& getenv);

/// A non-owning view of an MPI communicator with the few collectives Tessera needs.
class Communicator {
 public:
  explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {}
  static Communicator world() { return Communicator(MPI_COMM_WORLD); }
  /// This rank alone.
  static Communicator self() { return Communicator(MPI_COMM_SELF); }

  int rank() const;
  int size() const;
  MPI_Comm native() const { return comm_; }

  /// Element-wise sum in place. Collective over comm.
  void sum_in_place(std::vector<double>& values) const;
  /// Element-wise max in place. Collective over comm.
  void max_in_place(std::vector<double>& values) const;
  /// Every rank's `text`, in rank order, on rank 0 (empty elsewhere). Collective over comm.
  std::vector<std::string> gather_to_root(const std::string& text) const;
  /// Every rank's `bytes`, concatenated in rank order, on every rank. Collective over comm.
  std::string all_gather(const std::string& bytes) const;
  /// Rank 0's `text` on every rank. Collective over comm.
  std::string broadcast_from_root(const std::string& text) const;
  /// Logical or of a flag over all ranks. Collective over comm.
  bool any(bool flag) const;
  /// Collective over comm.
  void barrier() const;

  /// The ranks that pass the same `color` form a new communicator, ordered by `key`; it is
  /// freed when the last copy of the result goes. Collective over comm.
  Communicator split(int color, int key) const;

 private:
  MPI_Comm comm_;
  std::shared_ptr<const void> owner_;  ///< frees comm_ when it came from split()
};

/// The MPI standard version ("4.0") and the first line of the library's version string.
struct MpiVersion {
  std::string standard;
  std::string library;
};
MpiVersion mpi_version();

/// Prints only on rank 0 of the world (deal.II's ConditionalOStream idea).
bool is_root();

}  // namespace tessera::parallel
