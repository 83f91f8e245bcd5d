#include "tessera/nn/fbpinn.hpp"

#include <cmath>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
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

torch::Tensor FbpinnImpl::sum_by_point(const LevelPlan& plan, const torch::Tensor& values,
                                       int64_t n, int64_t dim) {
  auto shape = values.sizes().vec();
  shape[static_cast<std::size_t>(dim)] = n * plan.per_point;
  auto table = torch::zeros(shape, values.options()).index_copy(dim, plan.place, values);
  shape[static_cast<std::size_t>(dim)] = n;
  shape.insert(shape.begin() + dim + 1, plan.per_point);
  return table.view(shape).sum(dim + 1);
}

LevelPlan FbpinnImpl::plan_level(const torch::Tensor& coordinates, std::size_t level) const {
  const int64_t n = coordinates.size(0), inputs = options_.inputs;
  const auto index = torch::TensorOptions().dtype(torch::kLong).device(coordinates.device());
  const auto lower = support_lower().to(coordinates.options());
  const auto upper = support_upper().to(coordinates.options());
  const int64_t first = level_first_[level], count = level_first_[level + 1] - first;
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
      const int64_t most =
          n == 0 ? 1 : std::max<int64_t>(1, core::read_integer(inside.sum(1).max()));
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
  LevelPlan plan;
  const auto found = valid.nonzero();  // sorted by point, then by cell
  plan.point = found.select(1, 0);
  const auto local = cell.index({plan.point, found.select(1, 1)});
  plan.subdomain = local + first;
  const int64_t pairs = plan.point.size(0);
  const auto order = torch::arange(pairs, index);
  if (pairs == 0) {
    plan.row = plan.place = plan.by_subdomain = order;
    plan_windows(coordinates, plan);
    return plan;
  }
  // A point's k-th pair goes to column k of its row in the sum table.
  const auto per_point = torch::bincount(plan.point, {}, n);
  plan.per_point = core::read_integer(per_point.max());
  plan.place = plan.point * plan.per_point + order -
               (per_point.cumsum(0) - per_point).index_select(0, plan.point);
  // A subdomain's k-th pair (by point) goes to row k of its block in the padded batch.
  const auto per_subdomain = torch::bincount(local, {}, count);
  plan.rows = core::read_integer(per_subdomain.max());
  plan.by_subdomain = torch::argsort(local * n + plan.point);
  const auto& by_subdomain = plan.by_subdomain;
  const auto sorted = local.index_select(0, by_subdomain);
  const auto rank_in_subdomain =
      order - (per_subdomain.cumsum(0) - per_subdomain).index_select(0, sorted);
  plan.row =
      torch::empty_like(order).index_copy_(0, by_subdomain, sorted * plan.rows + rank_in_subdomain);
  plan_windows(coordinates, plan);
  return plan;
}

void FbpinnImpl::plan_windows(const torch::Tensor& coordinates, LevelPlan& plan) const {
  const int64_t n = coordinates.size(0), inputs = options_.inputs, pairs = plan.pairs();
  const auto options = coordinates.options();
  const auto r = radii_.index_select(0, plan.subdomain).to(options);
  const auto t = (coordinates.index_select(0, plan.point) -
                  centres_.index_select(0, plan.subdomain).to(options)) /
                 r;
  const auto cut = windowed_.index_select(0, plan.subdomain) > 0.5;
  // Per axis the factor b(t) = ((1 + cos(pi t)) / 2)^2 and its derivatives in x (1, 0, 0 on
  // an uncut axis).
  const auto c = torch::cos(M_PI * t), s = torch::sin(M_PI * t);
  const auto zero = torch::zeros_like(t);
  const auto f = torch::where(cut, bump(t), torch::ones_like(t));
  const auto df = torch::where(cut, -(M_PI / 2) * (1 + c) * s / r, zero);
  const auto d2f = torch::where(cut, (M_PI * M_PI / 2) * (s * s - (1 + c) * c) / (r * r), zero);
  // The product over the axes, by the product rule one factor at a time: value v, gradient g,
  // Hessian h.
  auto v = torch::ones({pairs}, options);
  auto g = torch::zeros({pairs, inputs}, options);
  auto h = torch::zeros({pairs, inputs, inputs}, options);
  for (int64_t a = 0; a < inputs; ++a) {
    const auto fa = f.select(1, a), dfa = df.select(1, a);
    auto ga = torch::zeros({pairs, inputs}, options);
    ga.select(1, a).copy_(dfa);
    h = h * fa.view({-1, 1, 1}) + g.unsqueeze(2) * ga.unsqueeze(1) +
        ga.unsqueeze(2) * g.unsqueeze(1);
    h.select(1, a).select(1, a).add_(v * d2f.select(1, a));
    g = g * fa.unsqueeze(1) + v.unsqueeze(1) * ga;
    v = v * fa;
  }
  // Normalised by the level's sum S at the point: w = v / S, so (from v = w S)
  //   grad w = (grad v - w grad S) / S,
  //   hess w = (hess v - grad w grad S^T - grad S grad w^T - w hess S) / S.
  const auto packed = torch::cat({v.unsqueeze(1), g, h.view({pairs, inputs * inputs})}, 1);
  const auto total = sum_by_point(plan, packed, n).index_select(0, plan.point);
  const auto sum = total.select(1, 0), sum_gradient = total.narrow(1, 1, inputs);
  const auto sum_hessian =
      total.narrow(1, 1 + inputs, inputs * inputs).view({pairs, inputs, inputs});
  plan.local = t;
  plan.window = v / sum;
  plan.window_gradient = (g - plan.window.unsqueeze(1) * sum_gradient) / sum.unsqueeze(1);
  plan.window_hessian = (h - plan.window_gradient.unsqueeze(2) * sum_gradient.unsqueeze(1) -
                         sum_gradient.unsqueeze(2) * plan.window_gradient.unsqueeze(1) -
                         plan.window.view({-1, 1, 1}) * sum_hessian) /
                        sum.view({-1, 1, 1});
}

std::vector<LevelPlan> FbpinnImpl::plans(const torch::Tensor& x) const {
  const auto coordinates = x.detach();
  for (auto entry = recent_plans_.begin(); entry != recent_plans_.end(); ++entry) {
    const auto& seen = entry->first;
    if (seen.sizes() == coordinates.sizes() && seen.dtype() == coordinates.dtype() &&
        seen.device() == coordinates.device() && torch::equal(seen, coordinates)) {
      auto found = *entry;
      recent_plans_.erase(entry);
      recent_plans_.push_front(found);
      return found.second;
    }
  }
  std::vector<LevelPlan> levels;
  for (std::size_t level = 0; level < options_.levels.size(); ++level)
    levels.push_back(plan_level(coordinates, level));
  recent_plans_.emplace_front(coordinates.clone(), levels);
  if (recent_plans_.size() > plans_kept_) recent_plans_.pop_back();
  return levels;
}

std::pair<torch::Tensor, torch::Tensor> FbpinnImpl::local_and_window(const torch::Tensor& x,
                                                                     const LevelPlan& plan) const {
  const auto t = (x.index_select(0, plan.point) - centres_.index_select(0, plan.subdomain)) /
                 radii_.index_select(0, plan.subdomain);
  const auto cut = windowed_.index_select(0, plan.subdomain) > 0.5;
  const auto raw = torch::where(cut, bump(t), torch::ones_like(t)).prod(1);
  // Normalised per level: the level's windows sum to 1 at every point they cover.
  const auto total = sum_by_point(plan, raw.unsqueeze(1), x.size(0)).squeeze(1);
  return {t, raw / total.index_select(0, plan.point)};
}

torch::Tensor FbpinnImpl::windows(const torch::Tensor& x) const {
  const int64_t n = x.size(0), count = subdomains();
  auto dense = torch::zeros({n * count}, x.options());
  const auto levels = plans(x);
  for (const auto& plan : levels)
    dense =
        dense.index_put({plan.point * count + plan.subdomain}, local_and_window(x, plan).second);
  return dense.view({n, count});
}

torch::Tensor FbpinnImpl::level_output(const torch::Tensor& x, const LevelPlan& plan,
                                       std::size_t level) const {
  const int64_t n = x.size(0), inputs = options_.inputs;
  const int64_t first = level_first_[level], count = level_first_[level + 1] - first;
  if (plan.pairs() == 0) return torch::zeros({n, options_.outputs}, x.options());
  const auto [local, window] = local_and_window(x, plan);
  // Each subdomain's points side by side in a padded batch [count, rows, inputs]. The cells of
  // one level are alike, so the padding is small.
  auto h = torch::zeros({count * plan.rows, inputs}, local.options())
               .index_copy(0, plan.row, local)
               .view({count, plan.rows, inputs});
  for (std::size_t layer = 0; layer < weights_.size(); ++layer) {
    h = torch::baddbmm(biases_[layer].narrow(0, first, count), h,
                       weights_[layer].narrow(0, first, count).transpose(1, 2));
    if (layer + 1 < weights_.size()) h = activate(options_.activation, h);
  }
  const auto values = h.reshape({count * plan.rows, options_.outputs}).index_select(0, plan.row);
  return sum_by_point(plan, values * window.unsqueeze(1), n);
}

torch::Tensor FbpinnImpl::forward(const torch::Tensor& x) {
  const int64_t n = x.size(0);
  // The levels are added in order; each is one padded batch of its own subdomains.
  torch::Tensor u = x.narrow(1, 0, 1).mul(0).expand({n, options_.outputs});
  const auto levels = plans(x);
  for (std::size_t level = 0; level < levels.size(); ++level)
    u = u + level_output(x, levels[level], level);
  return u;
}

}  // namespace tessera::nn
