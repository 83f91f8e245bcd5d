#include "tessera/nn/fbpinn.hpp"

#include <cmath>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::nn {

std::vector<int64_t> WindowGrid::pieces() const {
  std::vector<int64_t> counts;
  for (const auto& axis : edges) counts.push_back(static_cast<int64_t>(axis.size()) - 1);
  return counts;
}

int64_t WindowGrid::cells() const {
  int64_t count = 1;
  for (int64_t p : pieces()) count *= p;
  return count;
}

namespace {

/// Rows of `values` [P, k] added up per point, for pairs sorted by `point` [P]: [n, k]. Each
/// point's rows are placed side by side and summed in their order, so the result does not
/// depend on how the sum is scheduled (unlike a scatter-add).
torch::Tensor sum_by_point(const torch::Tensor& values, const torch::Tensor& point, int64_t n) {
  const int64_t pairs = values.size(0), width = values.size(1);
  if (pairs == 0) return torch::zeros({n, width}, values.options());
  const auto counts = torch::bincount(point, {}, n);
  const auto starts = counts.cumsum(0) - counts;
  const int64_t per_point = counts.max().item<int64_t>();
  const auto slot = torch::arange(pairs, point.options()) - starts.index_select(0, point);
  const auto flat = (point * per_point + slot).unsqueeze(1).expand({pairs, width});
  return torch::zeros({n * per_point, width}, values.options())
      .scatter(0, flat, values)
      .view({n, per_point, width})
      .sum(1);
}

/// ((1 + cos(pi t)) / 2)^2: 1 at the support's centre, 0 with its first three derivatives at
/// |t| = 1.
torch::Tensor bump(const torch::Tensor& t) {
  return torch::square(0.5 + 0.5 * torch::cos(M_PI * t));
}

}  // namespace

FbpinnImpl::FbpinnImpl(FbpinnOptions options) : options_(std::move(options)) {
  TESSERA_CHECK(options_.inputs >= 1 && options_.outputs >= 1, "network needs inputs and outputs");
  TESSERA_CHECK(!options_.levels.empty(), "an FBPINN needs at least one level");
  TESSERA_CHECK(options_.overlap > 0 && options_.overlap <= 1,
                "FBPINN overlap must be in (0, 1], got " << options_.overlap);
  std::vector<double> centre, radius, windowed;
  for (const auto& level : options_.levels) {
    TESSERA_CHECK(
        static_cast<int64_t>(level.edges.size()) == options_.inputs,
        "every FBPINN level needs cell edges along each of the " << options_.inputs << " inputs");
    for (const auto& axis : level.edges) {
      TESSERA_CHECK(axis.size() >= 2, "an FBPINN axis needs at least two cell edges");
      for (std::size_t k = 1; k < axis.size(); ++k)
        TESSERA_CHECK(axis[k - 1] < axis[k], "FBPINN cell edges must increase");
    }
    level_first_.push_back(static_cast<int64_t>(centre.size()) / options_.inputs);
    const auto pieces = level.pieces();
    for (int64_t cell = 0; cell < level.cells(); ++cell) {
      int64_t rest = cell;  // first axis fastest
      for (int64_t a = 0; a < options_.inputs; ++a) {
        const int64_t k = rest % pieces[a];
        rest /= pieces[a];
        const double lo = level.edges[a][k], hi = level.edges[a][k + 1];
        const bool cut = pieces[a] > 1;
        const double reach = cut ? options_.overlap * (hi - lo) / 2 : 0.0;
        centre.push_back((lo + hi) / 2);
        radius.push_back((hi - lo) / 2 + reach);
        windowed.push_back(cut ? 1.0 : 0.0);
      }
    }
  }
  const int64_t count = static_cast<int64_t>(centre.size()) / options_.inputs;
  level_first_.push_back(count);
  centres_ = register_buffer("centres", torch::tensor(centre, torch::kFloat64).view({count, -1}));
  radii_ = register_buffer("radii", torch::tensor(radius, torch::kFloat64).view({count, -1}));
  windowed_ =
      register_buffer("windowed", torch::tensor(windowed, torch::kFloat64).view({count, -1}));

  // Every subdomain's network is the plain MLP of its own stream, on [-1, 1] inputs.
  std::vector<std::vector<torch::Tensor>> weights(options_.hidden.size() + 1),
      biases(weights.size());
  for (int64_t j = 0; j < count; ++j) {
    MlpOptions o;
    o.inputs = options_.inputs;
    o.outputs = options_.outputs;
    o.hidden = options_.hidden;
    o.activation = options_.activation;
    o.xavier_uniform = options_.xavier_uniform;
    o.lower.assign(options_.inputs, -1.0);
    o.upper.assign(options_.inputs, 1.0);
    o.seed = options_.seed;
    o.subdomain = j;
    const MlpImpl network(o);
    const auto layer_weights = network.weights();
    for (std::size_t layer = 0; layer < weights.size(); ++layer) {
      weights[layer].push_back(layer_weights[layer].detach());
      biases[layer].push_back(network.biases()[layer].detach().unsqueeze(0));
    }
  }
  // Every output layer starts at zero, so the sum starts at u = 0. A random start would give
  // each small support steep slopes (its network's output over a half-width r, and the window's
  // over r again), which the first thousands of steps only spend undoing.
  for (auto& w : weights.back()) w = torch::zeros_like(w);
  for (std::size_t layer = 0; layer < weights.size(); ++layer) {
    weights_.push_back(
        register_parameter("weight" + std::to_string(layer), torch::stack(weights[layer])));
    biases_.push_back(
        register_parameter("bias" + std::to_string(layer), torch::stack(biases[layer])));
  }
}

void FbpinnImpl::set_bf16_products(bool on) {
  TESSERA_ASSERT(!on, "bfloat16 products were asked of an FBPINN");
}

FbpinnImpl::Pairs FbpinnImpl::pairs(const torch::Tensor& x, std::size_t level) const {
  const int64_t n = x.size(0), inputs = options_.inputs;
  const auto index = torch::TensorOptions().dtype(torch::kLong).device(x.device());
  const auto lower = support_lower().to(x.options()), upper = support_upper().to(x.options());
  const auto coordinates = x.detach();
  const int64_t first = level_first_[level];
  const auto pieces = options_.levels[level].pieces();
  // Per axis, the cells whose support holds each point, as [n, most per point] candidate
  // indices (ascending, true ones first) and whether each is one; then their combinations
  // across axes with the first axis fastest. A point meets few supports per axis, so this never
  // forms the [n, cells] membership of the whole level.
  torch::Tensor cell, valid;
  int64_t stride = 1;
  for (int64_t a = 0; a < inputs; ++a) {
    torch::Tensor candidates, holds;
    if (pieces[a] == 1) {
      candidates = torch::zeros({n, 1}, index);
      holds = torch::ones({n, 1}, index.dtype(torch::kBool));
    } else {
      const auto along = torch::arange(pieces[a], index) * stride + first;
      const auto lo = lower.index_select(0, along).select(1, a);
      const auto hi = upper.index_select(0, along).select(1, a);
      const auto c = coordinates.select(1, a).unsqueeze(1);
      const auto inside = (c > lo) & (c < hi);
      const int64_t most = n == 0 ? 1 : std::max<int64_t>(1, inside.sum(1).max().item<int64_t>());
      candidates = torch::argsort(inside.logical_not().to(torch::kInt), /*stable=*/true, 1)
                       .narrow(1, 0, most);
      holds = inside.gather(1, candidates);
    }
    candidates = candidates * stride;
    if (a == 0) {
      cell = candidates, valid = holds;
    } else {
      const int64_t combinations = candidates.size(1) * cell.size(1);
      cell = (candidates.unsqueeze(2) + cell.unsqueeze(1)).reshape({n, combinations});
      valid = (holds.unsqueeze(2) & valid.unsqueeze(1)).reshape({n, combinations});
    }
    stride *= pieces[a];
  }
  const auto found = valid.nonzero();  // sorted by point, then by cell
  const auto point = found.select(1, 0);
  const auto subdomain = cell.index({point, found.select(1, 1)}) + first;
  const auto t = (x.index_select(0, point) - centres_.index_select(0, subdomain)) /
                 radii_.index_select(0, subdomain);
  const auto cut = windowed_.index_select(0, subdomain) > 0.5;
  const auto raw = torch::where(cut, bump(t), torch::ones_like(t)).prod(1);
  // Normalised per level: the level's windows sum to 1 at every point they cover.
  const auto total = sum_by_point(raw.unsqueeze(1), point, n).squeeze(1);
  return {point, subdomain, raw / total.index_select(0, point), t};
}

torch::Tensor FbpinnImpl::windows(const torch::Tensor& x) const {
  const int64_t n = x.size(0), count = subdomains();
  auto dense = torch::zeros({n * count}, x.options());
  for (std::size_t level = 0; level < options_.levels.size(); ++level) {
    const auto p = pairs(x, level);
    dense = dense.index_put({p.point * count + p.subdomain}, p.window);
  }
  return dense.view({n, count});
}

torch::Tensor FbpinnImpl::level_output(const Pairs& p, std::size_t level, int64_t n) const {
  const int64_t found = p.point.size(0), inputs = options_.inputs;
  const int64_t first = level_first_[level], count = level_first_[level + 1] - first;
  if (found == 0) return torch::zeros({n, options_.outputs}, p.local.options());
  // Each subdomain's points side by side in a padded batch [count, rows, inputs]. The cells of
  // one level are alike, so the padding is small.
  const auto by_subdomain = torch::argsort((p.subdomain - first) * n + p.point);
  const auto subdomain = p.subdomain.index_select(0, by_subdomain) - first;
  const auto counts = torch::bincount(subdomain, {}, count);
  const int64_t rows = counts.max().item<int64_t>();
  const auto slot = torch::arange(found, subdomain.options()) -
                    (counts.cumsum(0) - counts).index_select(0, subdomain);
  const auto place = subdomain * rows + slot;
  auto h = torch::zeros({count * rows, inputs}, p.local.options())
               .scatter(0, place.unsqueeze(1).expand({found, inputs}),
                        p.local.index_select(0, by_subdomain))
               .view({count, rows, inputs});
  for (std::size_t layer = 0; layer < weights_.size(); ++layer) {
    h = torch::baddbmm(biases_[layer].narrow(0, first, count), h,
                       weights_[layer].narrow(0, first, count).transpose(1, 2));
    if (layer + 1 < weights_.size()) h = activate(options_.activation, h);
  }
  const auto in_subdomain_order =
      h.reshape({count * rows, options_.outputs}).index_select(0, place);
  // Back to the pairs' order (by point), where each point's terms are summed.
  const auto back = torch::empty_like(by_subdomain)
                        .scatter_(0, by_subdomain, torch::arange(found, by_subdomain.options()));
  const auto values = in_subdomain_order.index_select(0, back) * p.window.unsqueeze(1);
  return sum_by_point(values, p.point, n);
}

torch::Tensor FbpinnImpl::forward(const torch::Tensor& x) {
  const int64_t n = x.size(0);
  // The levels are added in order; each is one padded batch of its own subdomains.
  torch::Tensor u = x.narrow(1, 0, 1).mul(0).expand({n, options_.outputs});
  for (std::size_t level = 0; level < options_.levels.size(); ++level)
    u = u + level_output(pairs(x, level), level, n);
  return u;
}

}  // namespace tessera::nn
