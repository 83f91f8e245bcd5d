#include "tessera/physics/causal_weights.hpp"

namespace tessera::physics {

torch::Tensor time_chunks(const torch::Tensor& x, const CausalWindow& window) {
  const auto t = x.select(1, window.time_column).detach().to(torch::kFloat64);
  const double span = window.end - window.start;
  auto position = (t - window.start) / span * static_cast<double>(window.chunks);
  return position.floor().clamp(0, static_cast<double>(window.chunks - 1)).to(torch::kLong);
}

torch::Tensor chunk_means(const torch::Tensor& squares, const torch::Tensor& chunk,
                          int64_t chunks) {
  auto sums = torch::zeros({chunks}, squares.options()).index_add(0, chunk, squares);
  auto counts = torch::zeros({chunks}, squares.options())
                    .index_add(0, chunk, torch::ones_like(squares).detach());
  return sums / counts.clamp_min(1);
}

torch::Tensor causal_weights(const torch::Tensor& chunk_losses, double tolerance) {
  const auto losses = chunk_losses.detach();
  // Exclusive prefix sum: chunk k sees the losses of the chunks before it.
  const auto before = losses.cumsum(0) - losses;
  return torch::exp(-tolerance * before);
}

}  // namespace tessera::physics
