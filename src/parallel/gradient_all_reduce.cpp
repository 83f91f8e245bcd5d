#include "tessera/parallel/gradient_all_reduce.hpp"

#include <set>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/nccl_all_reduce.hpp"

namespace tessera::parallel {

namespace {

// NCCL refuses a communicator in which two ranks use the same GPU ("invalid usage"), which
// happens whenever a node runs more ranks than it has GPUs. The GPU is named by host and PCI
// bus id, since CUDA_VISIBLE_DEVICES can give one GPU different indices in different ranks.
bool ranks_share_a_gpu(const Communicator& comm, int device) {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  const std::string bus = cuda_device_bus_id(device);
  const std::string name = std::string(host, static_cast<std::size_t>(length)) + "/" +
                           (bus.empty() ? std::to_string(device) : bus);
  constexpr int width = MPI_MAX_PROCESSOR_NAME + 64;
  std::vector<char> mine(width, '\0'), all(static_cast<std::size_t>(width) * comm.size(), '\0');
  name.copy(mine.data(), width - 1);
  MPI_Allgather(mine.data(), width, MPI_CHAR, all.data(), width, MPI_CHAR, comm.native());
  std::set<std::string> distinct;
  for (int r = 0; r < comm.size(); ++r)
    distinct.insert(std::string(all.data() + static_cast<std::size_t>(r) * width));
  return static_cast<int>(distinct.size()) < comm.size();
}

}  // namespace

GradientAllReduce::GradientAllReduce(Communicator comm) : comm_(std::move(comm)) {}

GradientAllReduce::~GradientAllReduce() = default;

void GradientAllReduce::sum_gradients(const std::vector<torch::Tensor>& tensors,
                                      std::vector<double>* extras) {
  TESSERA_ASSERT(!tensors.empty() || (extras && !extras->empty()),
                 "an all-reduce with nothing to sum");
  const auto options = tensors.empty() ? torch::TensorOptions().dtype(torch::kFloat64)
                                       : tensors.front().options().requires_grad(false);
  // One flat bucket: every gradient (zeros where a tensor has none yet), then the extras.
  std::vector<torch::Tensor> pieces;
  for (const auto& t : tensors) {
    const auto& g = t.grad();
    pieces.push_back(g.defined() ? g.reshape(-1) : torch::zeros({t.numel()}, options));
  }
  if (extras && !extras->empty())
    pieces.push_back(torch::tensor(*extras, torch::TensorOptions().dtype(torch::kFloat64))
                         .to(options.device(), options.dtype()));
  auto bucket = torch::cat(pieces).contiguous();
  all_reduce(bucket);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    auto summed = bucket.slice(0, offset, offset + t.numel()).view(t.sizes());
    auto& g = t.mutable_grad();
    if (g.defined())
      g.copy_(summed);
    else
      g = summed.clone();
    offset += t.numel();
  }
  if (extras && !extras->empty()) {
    const auto values =
        core::read_to_host(bucket.slice(0, offset), torch::kFloat64, core::HostRead::message);
    for (std::size_t i = 0; i < extras->size(); ++i) (*extras)[i] = values.data_ptr<double>()[i];
  }
}

void GradientAllReduce::all_reduce(torch::Tensor& bucket) {
  ++calls_;
  if (comm_.size() == 1) return;
  if (bucket.is_cuda()) {
    if (!cuda_path_chosen_) {
      // Collective: every rank of the communicator reaches its first CUDA bucket together.
      const int device = bucket.device().index();
      if (have_nccl() && !ranks_share_a_gpu(comm_, device))
        nccl_ = std::make_unique<NcclAllReduce>(comm_, device);
      cuda_path_chosen_ = true;
    }
    if (nccl_) {
      nccl_->sum_in_place(bucket);
      return;
    }
    auto host = core::read_to_host(bucket, bucket.scalar_type(), core::HostRead::message);
    mpi_sum(host);
    bucket.copy_(host);
    return;
  }
  mpi_sum(bucket);
}

void GradientAllReduce::mpi_sum(torch::Tensor& bucket) {
  TESSERA_ASSERT(bucket.scalar_type() == torch::kFloat32 || bucket.scalar_type() == torch::kFloat64,
                 "gradient all-reduce supports float32 and float64 only");
  const MPI_Datatype type = bucket.scalar_type() == torch::kFloat32 ? MPI_FLOAT : MPI_DOUBLE;
  TESSERA_CHECK(bucket.numel() <= INT32_MAX, "gradient bucket too large for one MPI call");
  MPI_Allreduce(MPI_IN_PLACE, bucket.data_ptr(), static_cast<int>(bucket.numel()), type, MPI_SUM,
                comm_.native());
}

}  // namespace tessera::parallel
