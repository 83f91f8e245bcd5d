#include "tessera/train/slice_sums.hpp"

#include <cstring>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train {
namespace {

/// A record as bytes: its gradient's elements, then its figures.
void append_bytes(std::string& into, const SliceRecord& record) {
  if (record.gradient.defined()) {
    const auto flat =
        core::read_to_host(record.gradient, record.gradient.scalar_type(), core::HostRead::message);
    into.append(static_cast<const char*>(flat.data_ptr()), flat.numel() * flat.element_size());
  }
  into.append(reinterpret_cast<const char*>(record.figures.data()),
              record.figures.size() * sizeof(double));
}

}  // namespace

SliceShare SliceShare::of(int count, int index, int ranks, parallel::Communicator group) {
  return {count, count * index / ranks, count * (index + 1) / ranks, group};
}

SliceRecord fold_slice_records(const parallel::Communicator& group,
                               const std::vector<SliceRecord>& mine) {
  TESSERA_ASSERT(!mine.empty(), "a rank that shares slices holds at least one");
  const auto& shape = mine.front();
  const bool gradient = shape.gradient.defined();
  const int64_t values = gradient ? shape.gradient.numel() : 0;
  const auto options = gradient ? shape.gradient.options().device(torch::kCPU)
                                : torch::TensorOptions().dtype(torch::kFloat64);
  const std::size_t gradient_bytes =
      gradient ? static_cast<std::size_t>(values * shape.gradient.element_size()) : 0;
  const std::size_t record_bytes = gradient_bytes + shape.figures.size() * sizeof(double);

  std::string local;
  local.reserve(mine.size() * record_bytes);
  for (const auto& record : mine) {
    TESSERA_ASSERT(record.gradient.defined() == gradient &&
                       (!gradient || record.gradient.numel() == values) &&
                       record.figures.size() == shape.figures.size(),
                   "slice records of one pass differ in shape");
    append_bytes(local, record);
  }
  const std::string all = group.size() > 1 ? group.all_gather(local) : local;
  TESSERA_ASSERT(record_bytes > 0 && all.size() % record_bytes == 0, "torn slice records");

  SliceRecord sum;
  sum.figures.assign(shape.figures.size(), 0.0);
  std::vector<double> figures(shape.figures.size());
  for (std::size_t offset = 0; offset < all.size(); offset += record_bytes) {
    const char* record = all.data() + offset;
    if (gradient) {
      auto piece = torch::empty({values}, options);
      std::memcpy(piece.data_ptr(), record, gradient_bytes);
      if (sum.gradient.defined())
        sum.gradient.add_(piece);
      else
        sum.gradient = piece;
    }
    std::memcpy(figures.data(), record + gradient_bytes, figures.size() * sizeof(double));
    // The first record is copied, not added to zero: -0.0 + 0.0 would lose a sign.
    for (std::size_t k = 0; k < figures.size(); ++k)
      sum.figures[k] = offset == 0 ? figures[k] : sum.figures[k] + figures[k];
  }
  if (gradient) sum.gradient = sum.gradient.to(shape.gradient.device());
  return sum;
}

torch::Tensor flat_gradients(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> pieces;
  for (const auto& t : tensors)
    pieces.push_back(t.grad().defined() ? t.grad().reshape({-1})
                                        : torch::zeros({t.numel()}, t.options()));
  return pieces.empty() ? torch::Tensor() : torch::cat(pieces);
}

void set_gradients(const std::vector<torch::Tensor>& tensors, const torch::Tensor& flat) {
  int64_t offset = 0;
  for (auto t : tensors) {
    const int64_t n = t.numel();
    t.mutable_grad() = flat.slice(0, offset, offset + n).view_as(t).clone();
    offset += n;
  }
}

}  // namespace tessera::train
