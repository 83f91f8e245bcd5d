#include "tessera/train/unrolled_broyden.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessera/core/host_reads.hpp"
#include "tessera/train/limited_memory.hpp"

namespace tessera::train {

void UnrolledBroyden::restart(double scale) {
  base_ = scale;
  updated_ = false;
  updates_.clear();
  s_rows_ = torch::Tensor(), u_rows_ = torch::Tensor(), first_ = 0;
}

torch::Tensor UnrolledBroyden::times(const torch::Tensor& v) const {
  const std::size_t m = updates_.size();
  if (m == 0) return v * base_;
  // In order from row 0 until the memory is full, then a ring over every row (the one row
  // without a kept update, during an update, holds the dropped one's finite entries).
  const int64_t kept = first_ == 0 ? static_cast<int64_t>(m) : s_rows_.size(0);
  const auto to_doubles = [](const torch::Tensor& t) {
    // The products' figures steer the combination on the host, as the pairs' do in L-BFGS.
    const auto d = core::read_to_host(t, torch::kFloat64).contiguous();
    return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  };
  const auto with_s = to_doubles(s_rows_.narrow(0, 0, kept).mv(v));
  const auto with_u = to_doubles(u_rows_.narrow(0, 0, kept).mv(v));
  std::vector<double> s_coefficients(static_cast<std::size_t>(kept), 0.0);
  std::vector<double> u_coefficients(s_coefficients.size(), 0.0);
  double after = 1;  // W'_i: 1 / tau of every update after i
  for (std::size_t i = m; i-- > 0;) {
    const auto& k = updates_[i];
    const auto r = static_cast<std::size_t>(row(i));
    const double a = with_s[r], b = with_u[r];
    const double with = after / k.tau;  // W_i
    const double v_dot = k.rho * a - b / k.yu;
    u_coefficients[r] = with * (-b / k.yu - k.phi * v_dot);
    s_coefficients[r] = with * k.phi * k.yu * v_dot * k.rho + after * k.rho * a;
    after = with;
  }
  const auto as_tensor = [&](const std::vector<double>& c) {
    return torch::tensor(c, torch::kFloat64).to(s_rows_.device());
  };
  return v * base_ + s_rows_.narrow(0, 0, kept).t().mv(as_tensor(s_coefficients)) +
         u_rows_.narrow(0, 0, kept).t().mv(as_tensor(u_coefficients));
}

bool UnrolledBroyden::update(const torch::Tensor& s, const torch::Tensor& y, double sBs) {
  const double sy = core::read_double(s.dot(y));
  if (!(sy > 1e-300)) return false;
  // Full: the oldest update's terms go first (its scaling stays in the base and the later
  // weights), so that u is H y of the matrix this update corrects and the new matrix meets the
  // secant condition H y = s.
  if (updates_.size() == static_cast<std::size_t>(memory_)) {
    updates_.pop_front();
    first_ = (first_ + 1) % static_cast<std::size_t>(memory_);
  }
  const auto u = times(y);
  const double yu = core::read_double(y.dot(u));
  if (!(yu > 0)) return false;
  const double rho = 1 / sy, h = yu * rho, b = sBs * rho, a = h * b - 1;
  const auto scaling = self_scaled_broyden(h, b, static_cast<double>(s.numel()), !updated_);
  const double phi = (1 - scaling.theta) / (1 + a * scaling.theta);
  const auto kept = static_cast<int64_t>(updates_.size());
  if (!s_rows_.defined() || (first_ == 0 && kept == s_rows_.size(0))) {
    // Room grows in doubling steps up to the memory, the rows in order from row 0.
    const int64_t rows = std::min<int64_t>(memory_, std::max<int64_t>(16, 2 * kept));
    auto s_rows = torch::empty({rows, s.numel()}, s.options());
    auto u_rows = torch::empty_like(s_rows);
    if (kept > 0) {
      s_rows.narrow(0, 0, kept).copy_(s_rows_);
      u_rows.narrow(0, 0, kept).copy_(u_rows_);
    }
    s_rows_ = s_rows, u_rows_ = u_rows;
  }
  // After the kept ones: once the memory is full, the row the dropped update held.
  s_rows_[row(updates_.size())].copy_(s);
  u_rows_[row(updates_.size())].copy_(u);
  updates_.push_back({rho, yu, phi, scaling.tau});
  base_ /= scaling.tau;
  updated_ = true;
  return true;
}

void UnrolledBroyden::save(torch::serialize::OutputArchive& archive) const {
  std::vector<double> flat{base_, updated_ ? 1.0 : 0.0, static_cast<double>(first_)};
  for (const auto& k : updates_) flat.insert(flat.end(), {k.rho, k.yu, k.phi, k.tau});
  archive.write("unrolled.scalars", torch::tensor(flat, torch::kFloat64));
  if (!updates_.empty()) {
    archive.write("unrolled.s_rows", s_rows_);
    archive.write("unrolled.u_rows", u_rows_);
  }
}

void UnrolledBroyden::load(torch::serialize::InputArchive& archive) {
  restart(1);
  torch::Tensor scalars;
  archive.read("unrolled.scalars", scalars);
  const auto flat = scalars.contiguous();
  const double* f = flat.data_ptr<double>();
  base_ = f[0], updated_ = f[1] != 0, first_ = static_cast<std::size_t>(f[2]);
  for (int64_t k = 3; k + 3 < flat.numel(); k += 4)
    updates_.push_back({f[k], f[k + 1], f[k + 2], f[k + 3]});
  if (!updates_.empty()) {
    archive.read("unrolled.s_rows", s_rows_);
    archive.read("unrolled.u_rows", u_rows_);
  }
}

}  // namespace tessera::train
