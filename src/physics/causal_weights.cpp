#include "tessera/physics/causal_weights.hpp"

#include <utility>

namespace tessera::physics {

torch::Tensor ChunkWeighting::loss(const torch::Tensor& sums) const {
  return (weights * (sums / counts.clamp_min(1))).sum() / filled;
}

torch::Tensor ChunkWeighting::row_factors(const torch::Tensor& chunk) const {
  return (weights / counts.clamp_min(1)).index_select(0, chunk) / filled;
}

ChunkWeighting ChunkWeighting::to(torch::Device device) const {
  return {weights.to(device), counts.to(device), filled.to(device)};
}

torch::Tensor time_chunks(const torch::Tensor& x, const CausalWindow& window) {
  const auto t = x.select(1, window.time_column).detach().to(torch::kFloat64);
  const double span = window.end - window.start;
  auto position = (t - window.start) / span * static_cast<double>(window.chunks);
  return position.floor().clamp(0, static_cast<double>(window.chunks - 1)).to(torch::kLong);
}

torch::Tensor chunk_sums(const torch::Tensor& squares, const torch::Tensor& chunk, int64_t chunks) {
  return torch::zeros({chunks}, squares.options()).index_add(0, chunk, squares);
}

torch::Tensor chunk_counts(const torch::Tensor& chunk, int64_t chunks, torch::Dtype dtype) {
  return torch::bincount(chunk, {}, chunks).to(dtype);
}

torch::Tensor causal_weights(const torch::Tensor& chunk_losses, double tolerance) {
  const auto losses = chunk_losses.detach();
  // Exclusive prefix sum: chunk k sees the losses of the chunks before it.
  const auto before = losses.cumsum(0) - losses;
  return torch::exp(-tolerance * before);
}

namespace {

/// The scale the chunk losses are measured in: max(1, their mean over the `filled` chunks that
/// hold points), a tensor of no dimensions (no read). The tolerance is stated for residuals of
/// order one, as in a nondimensionalised problem. A problem whose residual is far larger (a
/// large source, a fast time scale) would otherwise hold every later chunk at weight
/// exp(-tolerance x its large loss) = 0 until Adam had driven the first chunks' residual down by
/// orders of magnitude; measured in its own scale, a chunk opens once the chunks before it hold
/// a small share of the loss. At order one and below this divides by exactly 1: the weights are
/// those of the published rule, to the bit.
torch::Tensor residual_scale(const torch::Tensor& chunk_losses, const torch::Tensor& filled) {
  return (chunk_losses.sum() / filled.clamp_min(1)).clamp_min(1.0);
}

/// `sums` and `counts` (all of one dtype) added up over the sample's holders in one collective
/// call: the equations' sums one after the other, then the counts.
std::pair<std::vector<torch::Tensor>, torch::Tensor> whole_sample(
    const std::vector<torch::Tensor>& sums, const torch::Tensor& counts,
    const ChunkSum& sum_over_holders) {
  std::vector<torch::Tensor> figures;
  for (const auto& s : sums) figures.push_back(s.detach());
  if (!sum_over_holders) return {figures, counts};
  figures.push_back(counts);
  auto whole = sum_over_holders(torch::cat(figures)).split(counts.size(0));
  const auto whole_counts = whole.back();
  whole.pop_back();
  return {whole, whole_counts};
}

}  // namespace

ChunkWeighting weigh_chunks(const std::vector<torch::Tensor>& sums, const torch::Tensor& counts,
                            double tolerance, const ChunkSum& sum_over_holders) {
  const auto [whole_sums, whole_counts] = whole_sample(sums, counts, sum_over_holders);
  auto losses = torch::zeros_like(whole_counts);
  for (const auto& s : whole_sums) losses = losses + s / whole_counts.clamp_min(1);
  const auto filled = whole_counts.gt(0).sum().to(whole_counts.scalar_type());
  return {causal_weights(losses / residual_scale(losses, filled), tolerance), whole_counts, filled};
}

}  // namespace tessera::physics
