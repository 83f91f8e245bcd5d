// GradientAllReduce over MPI (CPU tensors): one bucket, one call, exact sums, tensors without a
// gradient, extras riding along, float32 and float64, and a split communicator. Run by CTest as
//   mpiexec.mpich -n 2 test_gradient_all_reduce
//   mpiexec.mpich -n 4 test_gradient_all_reduce
// (main: mpi_doctest.hpp).
#include <doctest/doctest.h>
#include <mpi.h>

#include "mpi_doctest.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"

using tessera::parallel::Communicator;
using tessera::parallel::GradientAllReduce;

namespace {

/// A leaf of `shape` whose gradient on rank r is (r + 1) * (1, 2, 3, ...).
torch::Tensor leaf_with_gradient(std::vector<int64_t> shape, int rank, torch::Dtype dtype) {
  auto t = torch::zeros(shape, torch::TensorOptions().dtype(dtype)).set_requires_grad(true);
  t.mutable_grad() =
      (rank + 1) * torch::arange(1, t.numel() + 1, torch::TensorOptions().dtype(dtype)).view(shape);
  return t;
}

}  // namespace

TEST_CASE("gradients of many tensors are summed in one all-reduce") {
  const auto world = Communicator::world();
  const int ranks = world.size();
  const double rank_sum = ranks * (ranks + 1) / 2.0;  // sum of (r + 1)
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    GradientAllReduce sum(world);
    std::vector<torch::Tensor> tensors{
        leaf_with_gradient({3, 4}, world.rank(), dtype),
        leaf_with_gradient({5}, world.rank(), dtype),
        torch::zeros({2, 2}, torch::TensorOptions().dtype(dtype)).set_requires_grad(true)};
    std::vector<double> extras{1.0 * world.rank(), 2.5};
    sum.sum_gradients(tensors, &extras);
    CHECK(sum.calls() == 1);
    for (int k = 0; k < 2; ++k) {
      const auto expected =
          rank_sum *
          torch::arange(1, tensors[k].numel() + 1, torch::kFloat64).view(tensors[k].sizes());
      CHECK(torch::equal(tensors[k].grad().to(torch::kFloat64), expected));
    }
    // A tensor without a gradient contributed zeros and received the (zero) sum.
    REQUIRE(tensors[2].grad().defined());
    CHECK(tensors[2].grad().abs().sum().item<double>() == 0.0);
    CHECK(extras[0] == doctest::Approx(ranks * (ranks - 1) / 2.0));
    CHECK(extras[1] == doctest::Approx(2.5 * ranks));
  }
}

TEST_CASE("a split communicator sums only within its group") {
  const auto world = Communicator::world();
  // Pairs of consecutive ranks, like ranks_per_subdomain = 2 (a lone last rank is its own group).
  const auto pair = world.split(world.rank() / 2, world.rank() % 2);
  GradientAllReduce sum(pair);
  auto t = leaf_with_gradient({4}, world.rank(), torch::kFloat64);
  sum.sum_gradients({t});
  double expected = 0;
  for (int r = world.rank() / 2 * 2; r < std::min(world.size(), world.rank() / 2 * 2 + 2); ++r)
    expected += r + 1;
  CHECK(torch::equal(t.grad(), expected * torch::arange(1, 5, torch::kFloat64)));
  CHECK(sum.calls() == 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  torch::set_num_threads(1);
  const int status = run_doctest_on_all_ranks(argc, argv, "test_gradient_all_reduce");
  MPI_Finalize();
  return status;
}
