// Causal weights: chunks by time, per-chunk means, and weights that are 1 for the first chunk,
// never increase with time, and reach 1 everywhere once the residual vanishes.
#include <doctest/doctest.h>

#include <cmath>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/causal_weights.hpp"

using namespace tessera;

TEST_CASE("rows fall into the time chunk that holds them; the end belongs to the last") {
  physics::CausalWindow window{4, 1.0, 1, 0.0, 2.0};
  const auto x = torch::tensor({{9.0, 0.0}, {9.0, 0.49}, {9.0, 0.5}, {9.0, 1.99}, {9.0, 2.0}},
                               torch::kFloat64);
  const auto chunk = physics::time_chunks(x, window);
  CHECK(torch::equal(chunk, torch::tensor({0, 0, 1, 3, 3}, torch::kLong)));
}

TEST_CASE("chunk means average the rows of each chunk; an empty chunk is 0") {
  const auto squares = torch::tensor({1.0, 3.0, 5.0}, torch::kFloat64);
  const auto chunk = torch::tensor({0, 0, 2}, torch::kLong);
  const auto means = physics::chunk_means(squares, chunk, 3);
  CHECK(torch::allclose(means, torch::tensor({2.0, 0.0, 5.0}, torch::kFloat64)));
}

TEST_CASE("causal weights start at 1, never increase in time, and reach 1 when converged") {
  const auto losses = torch::tensor({0.5, 2.0, 0.0, 1.0}, torch::kFloat64);
  const auto w = physics::causal_weights(losses, 2.0);
  CHECK(w[0].item<double>() == 1.0);
  CHECK(w[1].item<double>() == doctest::Approx(std::exp(-1.0)));
  CHECK(w[2].item<double>() == doctest::Approx(std::exp(-5.0)));
  CHECK(w[3].item<double>() == doctest::Approx(std::exp(-5.0)));
  for (int k = 1; k < 4; ++k) CHECK(w[k].item<double>() <= w[k - 1].item<double>());
  const auto converged = physics::causal_weights(torch::zeros({8}, torch::kFloat64), 2.0);
  CHECK(torch::equal(converged, torch::ones({8}, torch::kFloat64)));
  // Detached: the weights steer the loss, they are not trained themselves.
  auto trained = losses.clone().set_requires_grad(true);
  CHECK_FALSE(physics::causal_weights(trained, 1.0).requires_grad());
}
