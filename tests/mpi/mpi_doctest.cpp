#define DOCTEST_CONFIG_IMPLEMENT
#include "mpi_doctest.hpp"

#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdio>

int run_doctest_on_all_ranks(int argc, char** argv, const char* name) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  doctest::Context context(argc, argv);
  // Rank 0 prints the usual summary; the others print only their failures.
  if (rank != 0) context.setOption("minimal", true);
  const int result = context.run();
  int failed_here = result != 0 ? 1 : 0;
  int failed_ranks = 0;
  MPI_Allreduce(&failed_here, &failed_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (failed_ranks == 0)
      std::printf("%s: passed on all %d ranks\n", name, size);
    else
      std::printf("%s: FAILED on %d of %d ranks\n", name, failed_ranks, size);
    std::fflush(stdout);
  }
  return failed_ranks == 0 ? 0 : 1;
}
