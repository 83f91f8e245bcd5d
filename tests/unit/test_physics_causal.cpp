// Causal weights: chunks by time, per-chunk sums, weights that are 1 for the first chunk, never
// increase with time and reach 1 everywhere once the residual vanishes, and the weighting of
// rows split between replicas, which must be that of every row on one rank.
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

TEST_CASE("chunk sums and counts add up the rows of each chunk; an empty chunk is 0") {
  const auto squares = torch::tensor({1.0, 3.0, 5.0}, torch::kFloat64);
  const auto chunk = torch::tensor({0, 0, 2}, torch::kLong);
  CHECK(torch::equal(physics::chunk_sums(squares, chunk, 3),
                     torch::tensor({4.0, 0.0, 5.0}, torch::kFloat64)));
  CHECK(torch::equal(physics::chunk_counts(chunk, 3, torch::kFloat64),
                     torch::tensor({2.0, 0.0, 1.0}, torch::kFloat64)));
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

namespace {

/// Two equations' squared residuals on 8 rows in 4 time chunks (chunk 2 empty).
struct Sample {
  torch::Tensor chunk = torch::tensor({0, 3, 1, 0, 3, 3, 1, 0}, torch::kLong);
  std::vector<torch::Tensor> squares{
      torch::tensor({0.5, 2.0, 0.25, 1.5, 3.0, 0.75, 1.25, 0.125}, torch::kFloat64),
      torch::tensor({0.0625, 1.0, 0.5, 0.25, 0.375, 2.5, 0.875, 1.75}, torch::kFloat64)};

  /// Rows [first, end): each equation's chunk sums, and the counts.
  std::pair<std::vector<torch::Tensor>, torch::Tensor> figures(int64_t first, int64_t end) const {
    const auto rows = chunk.slice(0, first, end);
    std::vector<torch::Tensor> sums;
    for (const auto& s : squares)
      sums.push_back(physics::chunk_sums(s.slice(0, first, end), rows, 4));
    return {sums, physics::chunk_counts(rows, 4, torch::kFloat64)};
  }
};

}  // namespace

TEST_CASE("a weighting's loss is (1/K) sum_k w_k L_k over the K chunks that hold rows") {
  const Sample sample;
  const auto [sums, counts] = sample.figures(0, 8);
  const auto weighting = physics::weigh_chunks(sums, counts, 2.0, {});
  CHECK(weighting.filled.item<double>() == 3);
  const auto losses = sums[0] / counts.clamp_min(1) + sums[1] / counts.clamp_min(1);
  // The chunk losses average 2.01 over the three filled chunks: the weights measure them in that
  // scale.
  const auto mean = losses.sum() / 3.0;
  REQUIRE(mean.item<double>() > 1.0);
  CHECK(torch::allclose(weighting.weights, physics::causal_weights(losses / mean, 2.0)));
  for (int e = 0; e < 2; ++e) {
    const auto expected = (weighting.weights * sums[e] / counts.clamp_min(1)).sum() / 3.0;
    CHECK(weighting.loss(sums[e]).item<double>() == doctest::Approx(expected.item<double>()));
    // Row by row, the same loss.
    const auto by_rows = (weighting.row_factors(sample.chunk) * sample.squares[e]).sum();
    CHECK(by_rows.item<double>() == doctest::Approx(expected.item<double>()));
  }
}

TEST_CASE("chunk losses of order one weigh by the published rule, larger ones in their scale") {
  const Sample sample;
  const auto [sums, counts] = sample.figures(0, 8);
  const auto losses_of = [&counts = counts](const std::vector<torch::Tensor>& s) {
    return s[0] / counts.clamp_min(1) + s[1] / counts.clamp_min(1);
  };
  // Residuals ten times smaller (squares / 100): mean below 1, exactly the published weights.
  const std::vector<torch::Tensor> small{sums[0] / 100, sums[1] / 100};
  CHECK(torch::equal(physics::weigh_chunks(small, counts, 2.0, {}).weights,
                     physics::causal_weights(losses_of(small), 2.0)));
  // Residuals ten and a hundred times larger weigh as the sample itself: a problem written in
  // other units keeps its weights, where exp(-2 x its losses) would close every later chunk.
  const auto weights = physics::weigh_chunks(sums, counts, 2.0, {}).weights;
  for (const double factor : {100.0, 10000.0}) {
    const std::vector<torch::Tensor> large{sums[0] * factor, sums[1] * factor};
    CHECK(
        torch::allclose(physics::weigh_chunks(large, counts, 2.0, {}).weights, weights, 1e-14, 0));
  }
  CHECK(physics::causal_weights(losses_of(sums) * 100, 2.0)[1].item<double>() < 1e-100);
  CHECK(weights[1].item<double>() > 0.2);
}

TEST_CASE("replicas holding slices of the rows, their sums added, weigh as one holder of all") {
  const Sample sample;
  const auto [all_sums, all_counts] = sample.figures(0, 8);
  const auto one_rank = physics::weigh_chunks(all_sums, all_counts, 2.0, {});
  // Replica 0 holds rows [0, 3), replica 1 rows [3, 8); the sum adds the other replica's figures
  // in the layout weigh_chunks sends: each equation's sums, then the counts.
  const auto [sums0, counts0] = sample.figures(0, 3);
  const auto [sums1, counts1] = sample.figures(3, 8);
  int calls = 0;
  const auto plus = [&calls](const torch::Tensor& other) {
    return [&calls, other](const torch::Tensor& mine) {
      ++calls;
      return mine + other;
    };
  };
  const auto replica0 =
      physics::weigh_chunks(sums0, counts0, 2.0, plus(torch::cat({sums1[0], sums1[1], counts1})));
  const auto replica1 =
      physics::weigh_chunks(sums1, counts1, 2.0, plus(torch::cat({sums0[0], sums0[1], counts0})));
  CHECK(calls == 2);  // one sum per weighting
  for (const auto* replica : {&replica0, &replica1}) {
    CHECK(torch::allclose(replica->weights, one_rank.weights, 1e-15, 0));
    CHECK(torch::equal(replica->counts, one_rank.counts));
    CHECK(torch::equal(replica->filled, one_rank.filled));
  }
  // Each replica's loss over its own rows; together, the loss over every row.
  for (int e = 0; e < 2; ++e) {
    const double together =
        replica0.loss(sums0[e]).item<double>() + replica1.loss(sums1[e]).item<double>();
    CHECK(together == doctest::Approx(one_rank.loss(all_sums[e]).item<double>()).epsilon(1e-14));
  }
  // Weighed by its own rows alone, a replica would see other weights.
  const auto alone = physics::weigh_chunks(sums0, counts0, 2.0, {});
  CHECK_FALSE(torch::allclose(alone.weights, one_rank.weights));
}
