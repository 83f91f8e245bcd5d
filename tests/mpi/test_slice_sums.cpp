// Sums over slices (train/slice_sums.hpp): every rank of the group ends with the fold of every
// slice's record in slice order, bit for bit what one rank holding all slices computes, and
// the shares cover the slices in contiguous runs. Run by CTest as
//   mpiexec.mpich -n 2 test_slice_sums
//   mpiexec.mpich -n 4 test_slice_sums
// (main: mpi_doctest.hpp).
#include <doctest/doctest.h>
#include <mpi.h>

#include "mpi_doctest.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/slice_sums.hpp"

using tessera::parallel::Communicator;
using tessera::train::fold_slice_records;
using tessera::train::SliceRecord;
using tessera::train::SliceShare;

namespace {

/// Slice k's record: values of very different sizes, so that the grouping of a sum shows in
/// its last bits.
SliceRecord record_of(int k, torch::Dtype dtype, bool gradient) {
  torch::manual_seed(100 + k);
  SliceRecord r;
  if (gradient)
    r.gradient = (torch::randn({257}, torch::kFloat64) * std::pow(10.0, k % 5)).to(dtype);
  for (int j = 0; j < 6; ++j) r.figures.push_back(std::pow(10.0, (k * 7 + j) % 9 - 4) / 3.0);
  return r;
}

/// The left fold of records 0 .. count-1, written out.
SliceRecord fold_by_hand(int count, torch::Dtype dtype, bool gradient) {
  SliceRecord sum = record_of(0, dtype, gradient);
  for (int k = 1; k < count; ++k) {
    const auto next = record_of(k, dtype, gradient);
    if (gradient) sum.gradient = sum.gradient + next.gradient;
    for (std::size_t j = 0; j < sum.figures.size(); ++j) sum.figures[j] += next.figures[j];
  }
  return sum;
}

}  // namespace

TEST_CASE("slice shares are contiguous runs that cover every slice once") {
  const auto world = Communicator::world();
  for (int count : {world.size(), 4, 7, 16}) {
    if (count < world.size()) continue;
    int next = 0;
    for (int r = 0; r < world.size(); ++r) {
      const auto share = SliceShare::of(count, r, world.size(), world);
      CHECK(share.first == next);
      CHECK(share.end > share.first);
      next = share.end;
    }
    CHECK(next == count);
  }
}

TEST_CASE("the fold of the slices is the same bits on every rank count") {
  const auto world = Communicator::world();
  for (auto dtype : {torch::kFloat32, torch::kFloat64})
    for (bool gradient : {true, false})
      for (int count : {4, 7, 8}) {
        if (count < world.size()) continue;
        const auto share = SliceShare::of(count, world.rank(), world.size(), world);
        std::vector<SliceRecord> mine;
        for (int k = share.first; k < share.end; ++k) mine.push_back(record_of(k, dtype, gradient));
        const auto sum = fold_slice_records(world, mine);
        const auto expected = fold_by_hand(count, dtype, gradient);
        REQUIRE(sum.gradient.defined() == gradient);
        if (gradient) {
          CHECK((sum.gradient.scalar_type() == dtype));
          CHECK(torch::equal(sum.gradient, expected.gradient));
        }
        CHECK(sum.figures == expected.figures);
        // Adding each rank's partial sum instead would group the additions differently.
        std::vector<SliceRecord> all;
        for (int k = 0; k < count; ++k) all.push_back(record_of(k, dtype, gradient));
        const auto alone = fold_slice_records(Communicator::self(), all);
        CHECK(alone.figures == sum.figures);
        if (gradient) CHECK(torch::equal(alone.gradient, sum.gradient));
        // The records are such that grouping shows: pairwise sums give other bits.
        if (gradient && count == 8) {
          auto pairs = (all[0].gradient + all[1].gradient) + (all[2].gradient + all[3].gradient);
          pairs =
              pairs + ((all[4].gradient + all[5].gradient) + (all[6].gradient + all[7].gradient));
          CHECK_FALSE(torch::equal(pairs, sum.gradient));
        }
      }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  torch::set_num_threads(1);
  const int status = run_doctest_on_all_ranks(argc, argv, "test_slice_sums");
  MPI_Finalize();
  return status;
}
