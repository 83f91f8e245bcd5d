#include "tessera/train/limited_memory.hpp"

#include <algorithm>
#include <cmath>

#include "archive_numbers.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"

namespace tessera::train {
namespace {

using detail::archived_number;
using detail::read_archived_number;

double local_dot(const torch::Tensor& a, const torch::Tensor& b) {
  return core::read_double(a.dot(b));
}

/// A vector of the recursion as coefficients: c_v v + sum_j s_coefficient[j] s_j + y[j] y_j.
struct Combination {
  double v = 1;
  std::vector<double> s, y;

  void scale(double factor) {
    v *= factor;
    for (auto& c : s) c *= factor;
    for (auto& c : y) c *= factor;
  }
};

/// The dot product of vector `b` (false: s, true: y) of pair i with `x`, from the geometry
/// and the pairs' products with v (`with_v`: s_j.v, y_j.v interleaved).
double dot_with(const PairGeometry& geometry, const std::vector<double>& with_v, std::size_t i,
                bool b, const Combination& x) {
  double sum = x.v * with_v[2 * i + (b ? 1 : 0)];
  for (std::size_t j = 0; j < geometry.size(); ++j)
    sum += x.s[j] * geometry.dot(i, b, j, false) + x.y[j] * geometry.dot(i, b, j, true);
  return sum;
}

}  // namespace

void PairGeometry::reserve(std::size_t slots) {
  std::vector<double> gram(slots * slots * 4, 0.0);
  const std::size_t kept = size();
  for (std::size_t i = 0; i < kept; ++i)
    for (std::size_t j = 0; j < kept; ++j)
      for (std::size_t c = 0; c < 4; ++c)
        gram[(i * slots + j) * 4 + c] = gram_[(slot(i) * slots_ + slot(j)) * 4 + c];
  gram_ = std::move(gram);
  slots_ = slots;
  first_ = 0;
}

void PairGeometry::set_products(std::size_t a, std::size_t b,
                                const std::array<double, 4>& products) {
  double* entry = &gram_[(a * slots_ + b) * 4];
  double* mirror = &gram_[(b * slots_ + a) * 4];
  for (std::size_t c = 0; c < 4; ++c) entry[c] = products[c];
  // x_b.x_a: the roles of s and y swap between the two pairs.
  mirror[0] = products[0], mirror[1] = products[2], mirror[2] = products[1],
  mirror[3] = products[3];
}

void PairGeometry::push(const PairScalars& scalars, const std::vector<double>& dots) {
  TESSERA_ASSERT(memory_ > 0, "a curvature history of no pairs");
  const std::size_t kept = size();
  TESSERA_ASSERT(dots.size() >= 4 * kept + 3, dots.size() << " products for a pair after " << kept);
  const bool full = static_cast<int64_t>(kept) >= memory_;
  if (!full && kept == slots_)
    reserve(std::min<std::size_t>(static_cast<std::size_t>(memory_),
                                  std::max<std::size_t>(16, 2 * kept)));
  // The slot after the newest pair's: when full, the oldest one's (whose products are not
  // copied) or a free one.
  const std::size_t target = slot(kept);
  for (std::size_t j = full ? 1 : 0; j < kept; ++j)
    set_products(target, slot(j), {dots[4 * j], dots[4 * j + 1], dots[4 * j + 2], dots[4 * j + 3]});
  const double* self = &dots[4 * kept];
  set_products(target, target, {self[0], self[1], self[1], self[2]});
  if (full) {
    // The dropped pair's corrections go; the scaling it applied to everything before stays.
    if (scalars_.front().self_scaled) base_ /= scalars_.front().tau;
    scalars_.pop_front();
    first_ = (first_ + 1) % slots_;
  }
  scalars_.push_back(scalars);
}

void PairGeometry::clear() {
  base_ = 1;
  scalars_.clear();
  gram_.clear();
  slots_ = 0;
  first_ = 0;
}

std::vector<double> PairGeometry::flat() const {
  std::vector<double> flat{static_cast<double>(size())};
  for (std::size_t i = 0; i < size(); ++i) {
    flat.insert(flat.end(), {scalars_[i].rho, scalars_[i].gamma});
    for (std::size_t j = 0; j <= i; ++j)
      for (std::size_t c = 0; c < 4; ++c)
        flat.push_back(gram_[(slot(i) * slots_ + slot(j)) * 4 + c]);
  }
  // The self-scaling after the plain layout, which histories written before it lack.
  flat.push_back(base_);
  for (const auto& scalars : scalars_)
    flat.insert(flat.end(), {scalars.tau, scalars.self_scaled ? 1.0 : 0.0});
  return flat;
}

void PairGeometry::set_flat(const std::vector<double>& flat) {
  clear();
  std::size_t k = 0;
  const auto count = static_cast<std::size_t>(flat.at(k++));
  if (count > 0) reserve(std::max<std::size_t>(count, 16));
  for (std::size_t i = 0; i < count; ++i) {
    scalars_.push_back({flat.at(k), flat.at(k + 1)});
    k += 2;
    for (std::size_t j = 0; j <= i; ++j, k += 4)
      set_products(i, j, {flat.at(k), flat.at(k + 1), flat.at(k + 2), flat.at(k + 3)});
  }
  if (k == flat.size()) return;
  base_ = flat.at(k++);
  for (auto& scalars : scalars_) {
    scalars.tau = flat.at(k);
    scalars.self_scaled = flat.at(k + 1) != 0;
    k += 2;
  }
}

std::optional<PairScalars> pair_scalars(double sy, double yy) {
  // Without positive curvature along the step the update would lose positive definiteness.
  if (!(sy > 1e-300) || !(yy > 0)) return std::nullopt;
  // The base follows the newest pair (Liu & Nocedal).
  return PairScalars{1 / sy, sy / yy};
}

void CurvatureHistory::reserve(int64_t rows, const torch::Tensor& like) {
  const auto kept = static_cast<int64_t>(geometry_.size());
  auto s_rows = torch::empty({rows, like.numel()}, like.options());
  auto y_rows = torch::empty_like(s_rows);
  for (int64_t i = 0; i < kept && s_rows_.defined(); ++i) {
    s_rows[i].copy_(s(static_cast<std::size_t>(i)));
    y_rows[i].copy_(y(static_cast<std::size_t>(i)));
  }
  s_rows_ = s_rows, y_rows_ = y_rows, first_ = 0;
}

void CurvatureHistory::push(const torch::Tensor& s, const torch::Tensor& y,
                            const PairScalars& scalars, const std::vector<double>& dots) {
  const std::size_t kept = geometry_.size();
  geometry_.push(scalars, dots);
  if (geometry_.size() == kept) {  // full: the new pair takes the oldest one's row
    s_rows_[static_cast<int64_t>(first_)].copy_(s);
    y_rows_[static_cast<int64_t>(first_)].copy_(y);
    first_ = (first_ + 1) % static_cast<std::size_t>(s_rows_.size(0));
    return;
  }
  // Not full: the rows are in pair order from row 0. Room grows in doubling steps, up to the
  // memory.
  if (!s_rows_.defined() || static_cast<int64_t>(kept) == s_rows_.size(0))
    reserve(std::min<int64_t>(geometry_.memory(), std::max<int64_t>(16, 2 * kept)), s);
  s_rows_[static_cast<int64_t>(kept)].copy_(s);
  y_rows_[static_cast<int64_t>(kept)].copy_(y);
}

void CurvatureHistory::clear() {
  geometry_.clear();
  s_rows_ = torch::Tensor(), y_rows_ = torch::Tensor(), first_ = 0;
}

std::vector<double> CurvatureHistory::products_with(const torch::Tensor& v) const {
  const auto m = static_cast<int64_t>(geometry_.size());
  if (m == 0) return {};
  const auto to_doubles = [](const torch::Tensor& t) {
    const auto d = t.to(torch::kFloat64).contiguous();
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  };
  const auto with_s = to_doubles(s_rows_.narrow(0, 0, m).mv(v));
  const auto with_y = to_doubles(y_rows_.narrow(0, 0, m).mv(v));
  std::vector<double> products(2 * static_cast<std::size_t>(m));
  for (std::size_t i = 0; i < geometry_.size(); ++i)
    products[2 * i] = with_s[row(i)], products[2 * i + 1] = with_y[row(i)];
  return products;
}

torch::Tensor CurvatureHistory::combination(const torch::Tensor& v, double scale,
                                            const std::vector<double>& s_coefficients,
                                            const std::vector<double>& y_coefficients) const {
  const auto m = static_cast<int64_t>(geometry_.size());
  if (m == 0) return v * scale;
  std::vector<double> by_row_s(static_cast<std::size_t>(m)), by_row_y(by_row_s.size());
  for (std::size_t i = 0; i < geometry_.size(); ++i)
    by_row_s[row(i)] = s_coefficients.at(i), by_row_y[row(i)] = y_coefficients.at(i);
  const auto as_tensor = [&](const std::vector<double>& c) {
    return torch::tensor(c, torch::kFloat64).to(s_rows_.options());
  };
  return v * scale + s_rows_.narrow(0, 0, m).t().mv(as_tensor(by_row_s)) +
         y_rows_.narrow(0, 0, m).t().mv(as_tensor(by_row_y));
}

void CurvatureHistory::save(torch::serialize::OutputArchive& archive) const {
  const auto flat = geometry_.flat();
  archive.write("history.geometry", torch::tensor(flat, torch::kFloat64));
  archive.write("history.pairs", archived_number(static_cast<double>(geometry_.size())));
  if (geometry_.empty()) return;
  // The rows as they lie, so that a restart sums the pairs in the same order.
  const auto m = static_cast<int64_t>(geometry_.size());
  archive.write("history.s_rows", s_rows_.narrow(0, 0, m));
  archive.write("history.y_rows", y_rows_.narrow(0, 0, m));
  archive.write("history.first", archived_number(static_cast<double>(first_)));
}

void CurvatureHistory::load(torch::serialize::InputArchive& archive) {
  clear();
  torch::Tensor flat;
  archive.read("history.geometry", flat);
  const auto values = flat.contiguous();
  geometry_.set_flat(
      std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel()));
  const auto count = static_cast<std::size_t>(read_archived_number(archive, "history.pairs"));
  if (count == 0) return;
  torch::Tensor s_rows, y_rows;
  if (archive.try_read("history.s_rows", s_rows)) {
    archive.read("history.y_rows", y_rows);
    s_rows_ = s_rows, y_rows_ = y_rows;
    first_ = static_cast<std::size_t>(read_archived_number(archive, "history.first"));
    return;
  }
  // Checkpoints written before the rows: one entry per pair, oldest first.
  for (std::size_t i = 0; i < count; ++i) {
    torch::Tensor s, y;
    archive.read("history." + std::to_string(i) + ".s", s);
    archive.read("history." + std::to_string(i) + ".y", y);
    if (i == 0) {
      s_rows_ = torch::empty({static_cast<int64_t>(count), s.numel()}, s.options());
      y_rows_ = torch::empty_like(s_rows_);
    }
    s_rows_[static_cast<int64_t>(i)].copy_(s);
    y_rows_[static_cast<int64_t>(i)].copy_(y);
  }
}

std::vector<double> pair_figures(const CurvatureHistory& block, const torch::Tensor& s,
                                 const torch::Tensor& y) {
  const auto with_s = block.products_with(s), with_y = block.products_with(y);
  std::vector<double> figures;
  for (std::size_t j = 0; j < block.geometry().size(); ++j)
    figures.insert(figures.end(),
                   {with_s[2 * j], with_s[2 * j + 1], with_y[2 * j], with_y[2 * j + 1]});
  figures.insert(figures.end(), {local_dot(s, s), local_dot(s, y), local_dot(y, y)});
  return figures;
}

BroydenScaling self_scaled_broyden(double h, double b, double n, bool first) {
  const double a = h * b - 1;
  BroydenScaling scaling;  // theta 0: BFGS
  if (std::abs(a) > 1e-12 && b > 0) {
    const double rho_minus = std::min(1.0, h * (1 - std::sqrt(std::abs(a) / (1 + a))));
    const double theta_minus = (rho_minus - 1) / a, theta_plus = 1 / rho_minus;
    scaling.theta = std::max(theta_minus, std::min(theta_plus, (1 - b) / b));
  }
  const double theta = scaling.theta;
  if (first) {
    scaling.tau = h / (1 + a * theta);
  } else {
    const double sigma = 1 + theta * a;
    const double sigma_root = std::pow(std::abs(sigma), 1 / (1 - n));
    const double limit = b > 0 ? std::min(1.0, 1 / b) : 1.0;
    scaling.tau =
        theta <= 0 ? std::min(limit * sigma_root, sigma) : limit * std::min(sigma_root, 1 / theta);
  }
  if (!(scaling.tau > 0) || !std::isfinite(scaling.tau)) scaling.tau = 1;
  return scaling;
}

namespace {

/// H v on coefficients, from the pairs' products with v (`with_v`: s_j.v, y_j.v interleaved):
/// the two-loop recursion, each pair's update applied to the approximation before it divided
/// by its tau (1 for plain L-BFGS).
Combination inverse_times(const PairGeometry& geometry, const std::vector<double>& with_v) {
  const std::size_t m = geometry.size();
  Combination x;
  x.s.assign(m, 0.0);
  x.y.assign(m, 0.0);
  if (m == 0) {
    x.scale(geometry.base());
    return x;
  }
  std::vector<double> alpha(m);
  for (std::size_t i = m; i-- > 0;) {
    alpha[i] = geometry.scalars(i).rho * dot_with(geometry, with_v, i, false, x);
    x.y[i] -= alpha[i];
  }
  x.scale(geometry.self_scaled() ? geometry.base() : geometry.scalars(m - 1).gamma);
  for (std::size_t i = 0; i < m; ++i) {
    const auto& pair = geometry.scalars(i);
    const double beta = pair.rho * dot_with(geometry, with_v, i, true, x);
    if (!pair.self_scaled) {
      x.s[i] += alpha[i] - beta;
      continue;
    }
    x.s[i] -= beta;
    x.scale(1 / pair.tau);
    x.s[i] += alpha[i];
  }
  return x;
}

}  // namespace

std::optional<PairScalars> self_scaled_pair_scalars(const PairGeometry& geometry,
                                                    const std::vector<double>& dots, double sBs,
                                                    double n) {
  const std::size_t kept = geometry.size();
  const double sy = dots.at(4 * kept + 1), yy = dots.at(4 * kept + 2);
  auto scalars = pair_scalars(sy, yy);
  if (!scalars) return std::nullopt;
  // y.H y for the history before this pair: H y on coefficients, from y's products with the
  // kept pairs (y.s_j, y.y_j in each pair's row of dots).
  std::vector<double> with_y(2 * kept);
  for (std::size_t j = 0; j < kept; ++j)
    with_y[2 * j] = dots[4 * j + 2], with_y[2 * j + 1] = dots[4 * j + 3];
  const Combination Hy = inverse_times(geometry, with_y);
  double yHy = Hy.v * yy;
  for (std::size_t j = 0; j < kept; ++j)
    yHy += Hy.s[j] * with_y[2 * j] + Hy.y[j] * with_y[2 * j + 1];
  const auto scaling = self_scaled_broyden(yHy / sy, sBs / sy, n, geometry.empty());
  scalars->tau = scaling.tau;
  scalars->self_scaled = true;
  return scalars;
}

Pieces history_times(const PairGeometry& geometry,
                     const std::vector<const CurvatureHistory*>& blocks, const Pieces& v,
                     const BlockSum& sum) {
  TESSERA_ASSERT(blocks.size() == v.size(), blocks.size()
                                                << " histories for " << v.size() << " pieces");
  const std::size_t m = geometry.size();
  if (m == 0) return v;
  std::vector<std::vector<double>> per_block(blocks.size());
  for (std::size_t k = 0; k < blocks.size(); ++k) per_block[k] = blocks[k]->products_with(v[k]);
  const auto x = inverse_times(geometry, sum(per_block, 2 * m));
  Pieces product;
  for (std::size_t k = 0; k < blocks.size(); ++k)
    product.push_back(blocks[k]->combination(v[k], x.v, x.s, x.y));
  return product;
}

}  // namespace tessera::train
