// The CUDA path of GradientAllReduce: the same sums as the MPI path on CPU tensors, through
// NCCL where each rank has a GPU of its own and through MPI on host copies where ranks share
// one (NCCL refuses that). Built only when CMake found CUDA and NCCL; exits 77 (CTest: skipped)
// where this rank sees no GPU or LibTorch was built without CUDA. On a GPU machine:
//   mpiexec.mpich -n 2 test_nccl     (one node: rank r uses GPU r mod the GPUs it sees)
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdio>

#include "mpi_doctest.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/parallel/nccl_all_reduce.hpp"

using tessera::parallel::Communicator;
using tessera::parallel::GradientAllReduce;

TEST_CASE("CUDA gradients are summed through NCCL like CPU ones through MPI") {
  const auto world = Communicator::world();
  const int devices = tessera::parallel::cuda_device_count();
  const torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(world.rank() % devices));
  const bool own_gpu_each = world.size() <= devices;
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto cpu =
        torch::randn({1000, 37}, torch::TensorOptions().dtype(dtype)).set_requires_grad(true);
    cpu.mutable_grad() =
        torch::full({1000, 37}, world.rank() + 1.0, torch::TensorOptions().dtype(dtype));
    auto gpu = cpu.detach().to(device).set_requires_grad(true);
    gpu.mutable_grad() = cpu.grad().to(device);
    GradientAllReduce mpi_sum(world), nccl_sum(world);
    std::vector<double> extras{0.5};
    mpi_sum.sum_gradients({cpu});
    nccl_sum.sum_gradients({gpu}, &extras);
    CHECK(gpu.grad().is_cuda());
    CHECK(torch::equal(gpu.grad().cpu(), cpu.grad()));
    CHECK(extras[0] == doctest::Approx(0.5 * world.size()));
    CHECK(nccl_sum.calls() == 1);
    CHECK(nccl_sum.sums_through_nccl() == (world.size() > 1 && own_gpu_each));
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const bool have_gpu = tessera::parallel::cuda_device_count() > 0 && torch::cuda::is_available();
  int everywhere = have_gpu ? 1 : 0, all = 0;
  MPI_Allreduce(&everywhere, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::printf(
          "test_nccl: skipped: no CUDA device visible to LibTorch on every rank "
          "(NCCL backend built: %s)\n",
          tessera::parallel::have_nccl() ? "yes" : "no");
    MPI_Finalize();
    return 77;
  }
  const int status = run_doctest_on_all_ranks(argc, argv, "test_nccl");
  MPI_Finalize();
  return status;
}
