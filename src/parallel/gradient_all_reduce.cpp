#include "tessera/parallel/gradient_all_reduce.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/nccl_all_reduce.hpp"

namespace tessera::parallel {

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
    const auto values = bucket.slice(0, offset).to(torch::kCPU, torch::kFloat64).contiguous();
    for (std::size_t i = 0; i < extras->size(); ++i) (*extras)[i] = values.data_ptr<double>()[i];
  }
}

void GradientAllReduce::all_reduce(torch::Tensor& bucket) {
  ++calls_;
  if (comm_.size() == 1) return;
  if (bucket.is_cuda()) {
    if (!nccl_) nccl_ = std::make_unique<NcclAllReduce>(comm_, bucket.device().index());
    nccl_->sum_in_place(bucket);
    return;
  }
  TESSERA_ASSERT(bucket.scalar_type() == torch::kFloat32 || bucket.scalar_type() == torch::kFloat64,
                 "gradient all-reduce supports float32 and float64 only");
  const MPI_Datatype type = bucket.scalar_type() == torch::kFloat32 ? MPI_FLOAT : MPI_DOUBLE;
  TESSERA_CHECK(bucket.numel() <= INT32_MAX, "gradient bucket too large for one MPI call");
  MPI_Allreduce(MPI_IN_PLACE, bucket.data_ptr(), static_cast<int>(bucket.numel()), type, MPI_SUM,
                comm_.native());
}

}  // namespace tessera::parallel
