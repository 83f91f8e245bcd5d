#pragma once
// The main of every MPI unit test (Debian's doctest-dev has no doctest_mpi.h): every rank runs
// the doctest cases; the ranks' results are combined with MPI_Allreduce and reported from rank 0.
// A failing CHECK never skips an MPI call (no REQUIRE between collectives), so one rank's
// failure cannot hang the others.

/// Runs the doctest cases on every rank (MPI initialised by the caller); returns 0 when they
/// passed on all ranks, else 1. Collective over MPI_COMM_WORLD.
int run_doctest_on_all_ranks(int argc, char** argv, const char* name);
