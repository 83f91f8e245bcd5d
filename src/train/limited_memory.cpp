#include "tessera/train/limited_memory.hpp"

#include <algorithm>
#include <cmath>

#include "archive_numbers.hpp"
#include "tessera/core/error.hpp"

namespace tessera::train {
namespace {

using detail::archived_number;
using detail::read_archived_number;

double local_dot(const torch::Tensor& a, const torch::Tensor& b) { return a.dot(b).item<double>(); }

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

double PairGeometry::dot(std::size_t i, bool a, std::size_t j, bool b) const {
  if (i < j) return dot(j, b, i, a);
  return dots_.at(i).at(j)[(a ? 2 : 0) + (b ? 1 : 0)];
}

void PairGeometry::push(const PairScalars& scalars, const std::vector<double>& dots) {
  TESSERA_ASSERT(memory_ > 0, "a curvature history of no pairs");
  const std::size_t kept = size();
  TESSERA_ASSERT(dots.size() >= 4 * kept + 3, dots.size() << " products for a pair after " << kept);
  std::deque<std::array<double, 4>> row;
  for (std::size_t j = 0; j < kept; ++j)
    row.push_back({dots[4 * j], dots[4 * j + 1], dots[4 * j + 2], dots[4 * j + 3]});
  const double* self = &dots[4 * kept];
  row.push_back({self[0], self[1], self[1], self[2]});
  scalars_.push_back(scalars);
  dots_.push_back(std::move(row));
  if (static_cast<int64_t>(size()) > memory_) {
    scalars_.pop_front();
    dots_.pop_front();
    for (auto& older : dots_) older.pop_front();
  }
}

void PairGeometry::clear() {
  scalars_.clear();
  dots_.clear();
}

std::vector<double> PairGeometry::flat() const {
  std::vector<double> flat{static_cast<double>(size())};
  for (std::size_t i = 0; i < size(); ++i) {
    flat.insert(flat.end(), {scalars_[i].rho, scalars_[i].gamma});
    for (const auto& entry : dots_[i]) flat.insert(flat.end(), entry.begin(), entry.end());
  }
  return flat;
}

void PairGeometry::set_flat(const std::vector<double>& flat) {
  clear();
  std::size_t k = 0;
  const auto count = static_cast<std::size_t>(flat.at(k++));
  for (std::size_t i = 0; i < count; ++i) {
    scalars_.push_back({flat.at(k), flat.at(k + 1)});
    k += 2;
    std::deque<std::array<double, 4>> row;
    for (std::size_t j = 0; j <= i; ++j, k += 4)
      row.push_back({flat.at(k), flat.at(k + 1), flat.at(k + 2), flat.at(k + 3)});
    dots_.push_back(std::move(row));
  }
}

std::optional<PairScalars> pair_scalars(double sy, double yy) {
  // Without positive curvature along the step the update would lose positive definiteness.
  if (!(sy > 1e-300) || !(yy > 0)) return std::nullopt;
  // The base follows the newest pair (Liu & Nocedal).
  return PairScalars{1 / sy, sy / yy};
}

void CurvatureHistory::push(torch::Tensor s, torch::Tensor y, const PairScalars& scalars,
                            const std::vector<double>& dots) {
  geometry_.push(scalars, dots);
  pieces_.emplace_back(std::move(s), std::move(y));
  if (pieces_.size() > geometry_.size()) pieces_.pop_front();
}

void CurvatureHistory::clear() {
  geometry_.clear();
  pieces_.clear();
}

void CurvatureHistory::save(torch::serialize::OutputArchive& archive) const {
  const auto flat = geometry_.flat();
  archive.write("history.geometry", torch::tensor(flat, torch::kFloat64));
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    archive.write("history." + std::to_string(i) + ".s", pieces_[i].first);
    archive.write("history." + std::to_string(i) + ".y", pieces_[i].second);
  }
  archive.write("history.pairs", archived_number(static_cast<double>(pieces_.size())));
}

void CurvatureHistory::load(torch::serialize::InputArchive& archive) {
  clear();
  torch::Tensor flat;
  archive.read("history.geometry", flat);
  const auto values = flat.contiguous();
  geometry_.set_flat(
      std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel()));
  const auto count = static_cast<std::size_t>(read_archived_number(archive, "history.pairs"));
  for (std::size_t i = 0; i < count; ++i) {
    torch::Tensor s, y;
    archive.read("history." + std::to_string(i) + ".s", s);
    archive.read("history." + std::to_string(i) + ".y", y);
    pieces_.emplace_back(s, y);
  }
}

std::vector<double> pair_figures(const CurvatureHistory& block, const torch::Tensor& s,
                                 const torch::Tensor& y) {
  std::vector<double> figures;
  for (std::size_t j = 0; j < block.geometry().size(); ++j)
    figures.insert(figures.end(), {local_dot(s, block.s(j)), local_dot(s, block.y(j)),
                                   local_dot(y, block.s(j)), local_dot(y, block.y(j))});
  figures.insert(figures.end(), {local_dot(s, s), local_dot(s, y), local_dot(y, y)});
  return figures;
}

Pieces history_times(const PairGeometry& geometry,
                     const std::vector<const CurvatureHistory*>& blocks, const Pieces& v,
                     const BlockSum& sum) {
  TESSERA_ASSERT(blocks.size() == v.size(), blocks.size()
                                                << " histories for " << v.size() << " pieces");
  const std::size_t m = geometry.size();
  if (m == 0) return v;
  std::vector<std::vector<double>> per_block(blocks.size());
  for (std::size_t k = 0; k < blocks.size(); ++k)
    for (std::size_t j = 0; j < m; ++j)
      per_block[k].insert(per_block[k].end(),
                          {local_dot(blocks[k]->s(j), v[k]), local_dot(blocks[k]->y(j), v[k])});
  const auto with_v = sum(per_block, 2 * m);
  // The two-loop recursion on coefficients.
  Combination x;
  x.s.assign(m, 0.0);
  x.y.assign(m, 0.0);
  std::vector<double> alpha(m);
  for (std::size_t i = m; i-- > 0;) {
    alpha[i] = geometry.scalars(i).rho * dot_with(geometry, with_v, i, false, x);
    x.y[i] -= alpha[i];
  }
  x.scale(geometry.scalars(m - 1).gamma);
  for (std::size_t i = 0; i < m; ++i) {
    const double beta = geometry.scalars(i).rho * dot_with(geometry, with_v, i, true, x);
    x.s[i] += alpha[i] - beta;
  }
  Pieces product;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    auto piece = v[k] * x.v;
    for (std::size_t j = 0; j < m; ++j)
      piece = piece + blocks[k]->s(j) * x.s[j] + blocks[k]->y(j) * x.y[j];
    product.push_back(piece);
  }
  return product;
}

}  // namespace tessera::train
