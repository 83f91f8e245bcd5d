// Dense quasi-Newton iterations. Each step() call starts from a fresh evaluation of the closure:
// between calls the trainer may exchange interface data, which changes the function, so the
// only state carried over (and checkpointed) is the inverse-Hessian approximation.
#include "tessera/train/quasi_newton.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "archive_numbers.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train {
namespace {

using detail::archived_number;
using detail::read_archived_number;

double scalar_product(const torch::Tensor& a, const torch::Tensor& b) {
  return core::read_double(a.dot(b));
}

/// One term c u w^T of a low-rank update.
struct Outer {
  double c;
  torch::Tensor u, w;
};

/// Terms of every update: BFGS and SSBroyden are both rank-3 corrections.
constexpr std::size_t kTerms = 3;

/// Dot products of matrix rows with a vector, summed in four interleaved partial sums: a fixed
/// order that vectorises and does not depend on the thread count. Every product of the inverse
/// Hessian with a vector goes through this order (matrix_times() or during an update), so a
/// product computed along an update equals the one a restarted run computes on its own.
struct RowDot {
  static constexpr int64_t lanes = 4;
  double sum[lanes] = {0, 0, 0, 0};
  double tail = 0;
  void add(int64_t lane, double value, double factor) { sum[lane] += value * factor; }
  void add_tail(double value, double factor) { tail += value * factor; }
  double total() const { return (sum[0] + sum[1]) + (sum[2] + sum[3]) + tail; }
};

/// H v for a CPU matrix of doubles, in the RowDot order; other matrices use mv().
torch::Tensor matrix_times(const torch::Tensor& H, const torch::Tensor& v) {
  if (!H.is_cpu() || !H.is_contiguous() || H.scalar_type() != torch::kFloat64) return H.mv(v);
  const int64_t rows = H.size(0), n = H.size(1);
  const auto vector = v.contiguous();
  auto product = torch::empty({rows}, H.options());
  const double* h = H.data_ptr<double>();
  const double* t = vector.data_ptr<double>();
  double* p = product.data_ptr<double>();
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double* row = h + i * n;
      RowDot dot;
      int64_t j = 0;
      for (; j + RowDot::lanes <= n; j += RowDot::lanes)
        for (int64_t l = 0; l < RowDot::lanes; ++l) dot.add(l, row[j + l], t[j + l]);
      for (; j < n; ++j) dot.add_tail(row[j], t[j]);
      p[i] = dot.total();
    }
  });
  return product;
}

/// One pass of low_rank_update() over rows [begin, end). With `times`, also each new row's
/// product with it, in the RowDot order.
void update_row_range(double* h, int64_t n, int64_t begin, int64_t end, double scale,
                      const double* c, const double* const* u, const double* const* w,
                      const double* times, double* product) {
  const double* __restrict w0 = w[0];
  const double* __restrict w1 = w[1];
  const double* __restrict w2 = w[2];
  for (int64_t i = begin; i < end; ++i) {
    double* __restrict row = h + i * n;
    const double c0 = c[0] * u[0][i], c1 = c[1] * u[1][i], c2 = c[2] * u[2][i];
    const auto updated = [&](int64_t j) {
      return scale * row[j] + c0 * w0[j] + c1 * w1[j] + c2 * w2[j];
    };
    if (!times) {
      for (int64_t j = 0; j < n; ++j) row[j] = updated(j);
      continue;
    }
    RowDot dot;
    int64_t j = 0;
    for (; j + RowDot::lanes <= n; j += RowDot::lanes)
      for (int64_t l = 0; l < RowDot::lanes; ++l) {
        row[j + l] = updated(j + l);
        dot.add(l, row[j + l], times[j + l]);
      }
    for (; j < n; ++j) {
      row[j] = updated(j);
      dot.add_tail(row[j], times[j]);
    }
    product[i] = dot.total();
  }
}

/// H <- scale H + sum_k c_k u_k w_k^T, for H of any shape (u_k its rows, w_k its columns), and
/// returns the new H times `times` when that is defined. On the CPU in one pass over H: the
/// matrix is the largest object of the optimizer (n^2 doubles), so each pass costs a full sweep
/// of memory, and the product the next iteration needs (H g for the accepted gradient) rides
/// along instead of taking a sweep of its own.
torch::Tensor low_rank_update(torch::Tensor& H, double scale, const std::vector<Outer>& terms,
                              const torch::Tensor& times = {}) {
  if (!H.is_cpu() || !H.is_contiguous()) {
    H.mul_(scale);
    for (const auto& t : terms) H.addr_(t.u, t.w, 1, t.c);
    return times.defined() ? matrix_times(H, times) : torch::Tensor();
  }
  TESSERA_ASSERT(terms.size() == kTerms, "low_rank_update takes " << kTerms << " terms");
  const int64_t rows = H.size(0), n = H.size(1);
  std::vector<torch::Tensor> kept;
  const double* u[kTerms];
  const double* w[kTerms];
  double c[kTerms];
  for (std::size_t k = 0; k < terms.size(); ++k) {
    kept.push_back(terms[k].u.contiguous()), kept.push_back(terms[k].w.contiguous());
    u[k] = kept[kept.size() - 2].data_ptr<double>();
    w[k] = kept.back().data_ptr<double>();
    c[k] = terms[k].c;
  }
  const auto contiguous_times = times.defined() ? times.contiguous() : torch::Tensor();
  auto product = times.defined() ? torch::empty({rows}, H.options()) : torch::Tensor();
  const double* t = times.defined() ? contiguous_times.data_ptr<double>() : nullptr;
  double* p = times.defined() ? product.data_ptr<double>() : nullptr;
  double* h = H.data_ptr<double>();
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    update_row_range(h, n, begin, end, scale, c, u, w, t, p);
  });
  return product;
}

}  // namespace

QuasiNewton::QuasiNewton(std::vector<torch::Tensor> parameters, QuasiNewtonOptions options)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(parameters))},
                std::make_unique<QuasiNewtonOptions>(options)),
      history_(options.memory()),
      whole_updates_(options.memory()),
      keeps_whole_updates_(options.memory() > 0 &&
                           options.update() == QuasiNewtonUpdate::ssbroyden &&
                           options.whole_updates()) {}

torch::Tensor QuasiNewton::inverse_hessian_times(const torch::Tensor& v) const {
  if (options().memory() == 0) return matrix_times(hessian_, v);
  if (keeps_whole_updates_) return whole_updates_.times(v);
  if (history_.empty()) return v * fresh_scale_;
  const auto own = [](const std::vector<std::vector<double>>& figures, std::size_t) {
    return figures.at(0);
  };
  return history_times(history_.geometry(), {&history_}, {v}, own)[0];
}

void QuasiNewton::restart_inverse_hessian(int64_t n, const torch::TensorOptions& options,
                                          double scale) {
  updates_ = 0;
  if (this->options().memory() > 0) {
    whole_updates_.restart(scale);
    history_.clear();
    fresh_scale_ = scale;
    return;
  }
  hessian_ = scale == 1 ? torch::eye(n, options) : torch::eye(n, options) * scale;
}

const QuasiNewtonOptions& QuasiNewton::options() const {
  return static_cast<const QuasiNewtonOptions&>(param_groups_.at(0).options());
}

torch::Tensor QuasiNewton::flat_parameters() const {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : param_groups_.at(0).params())
    pieces.push_back(p.detach().reshape({-1}).to(torch::kFloat64));
  return torch::cat(pieces);
}

torch::Tensor QuasiNewton::flat_gradient() const {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : param_groups_.at(0).params())
    pieces.push_back(p.grad().defined()
                         ? p.grad().reshape({-1}).to(torch::kFloat64)
                         : torch::zeros({p.numel()}, p.options().dtype(torch::kFloat64)));
  return torch::cat(pieces);
}

void QuasiNewton::set_parameters(const torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : param_groups_.at(0).params()) {
    p.copy_(flat.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
}

double QuasiNewton::evaluate(const LossClosure& closure, torch::Tensor& gradient) {
  double value = 0;
  {
    torch::AutoGradMode grad_mode(true);
    value = core::read_double(closure());
  }
  gradient = flat_gradient();
  return value;
}

torch::Tensor QuasiNewton::update_inverse_hessian(const torch::Tensor& s, const torch::Tensor& y,
                                                  double sBs, const torch::Tensor& times) {
  if (keeps_whole_updates_) {
    if (whole_updates_.update(s, y, sBs)) ++updates_;
    return {};
  }
  if (options().memory() > 0) {
    const auto figures = pair_figures(history_, s, y);
    const std::size_t kept = history_.geometry().size();
    const auto scalars = options().update() == QuasiNewtonUpdate::ssbroyden
                             ? self_scaled_pair_scalars(history_.geometry(), figures, sBs,
                                                        static_cast<double>(s.numel()))
                             : pair_scalars(figures[4 * kept + 1], figures[4 * kept + 2]);
    if (scalars) history_.push(s, y, *scalars, figures), ++updates_;
    return {};
  }
  const auto Hy = matrix_times(hessian_, y);
  auto product = update_rows(hessian_, 0, options().update(), updates_ == 0, s, y, Hy, sBs, times);
  if (!product) return times.defined() ? matrix_times(hessian_, times) : torch::Tensor();
  ++updates_;
  return *product;
}

std::optional<torch::Tensor> update_rows(torch::Tensor& H, int64_t offset, QuasiNewtonUpdate method,
                                         bool first, const torch::Tensor& s, const torch::Tensor& y,
                                         torch::Tensor Hy, double sBs, const torch::Tensor& times) {
  const double sy = scalar_product(s, y);
  // Without positive curvature along the step the update would lose positive definiteness.
  if (!(sy > 1e-300)) return std::nullopt;
  const double rho = 1 / sy;
  const auto n = static_cast<double>(s.numel());
  const auto rows = [&](const torch::Tensor& full) { return full.narrow(0, offset, H.size(0)); };
  if (method == QuasiNewtonUpdate::bfgs) {
    // The first update starts from H = (s.y / y.y) I (Nocedal & Wright, eq. 6.20).
    if (first) {
      const double scale = sy / scalar_product(y, y);
      H = identity_rows(H.size(0), s.numel(), offset, H.options()) * scale;
      Hy = y * scale;
    }
    const double yHy = scalar_product(y, Hy);
    return low_rank_update(
        H, 1, {{-rho, rows(Hy), s}, {-rho, rows(s), Hy}, {rho * (1 + rho * yHy), rows(s), s}},
        times);
  }
  // Self-scaled Broyden: H <- (H - Hy Hy^T / yHy + phi yHy v v^T) / tau + rho s s^T with
  // v = rho s - Hy / yHy, where theta (the Broyden-family member, through phi) and tau (the
  // scaling) follow from h = yHy / s.y and b = s^T B s / s.y (B = H^-1).
  const double yHy = scalar_product(y, Hy);
  const double h = yHy * rho, b = sBs * rho, a = h * b - 1;
  const auto [theta, tau] = self_scaled_broyden(h, b, n, first);
  const double phi = (1 - theta) / (1 + a * theta);
  const auto v = s * rho - Hy / yHy;
  return low_rank_update(
      H, 1 / tau,
      {{-1 / (yHy * tau), rows(Hy), Hy}, {phi * yHy / tau, rows(v), v}, {rho, rows(s), s}}, times);
}

torch::Tensor identity_rows(int64_t rows, int64_t columns, int64_t offset,
                            const torch::TensorOptions& options) {
  auto H = torch::zeros({rows, columns}, options);
  H.narrow(1, offset, rows).diagonal().fill_(1);
  return H;
}

torch::Tensor QuasiNewton::step(LossClosure closure) {
  TESSERA_CHECK(closure, "quasi-Newton: step() needs a closure");
  const auto& o = options();
  auto x = flat_parameters();
  torch::Tensor gradient;
  double loss = evaluate(closure, gradient);
  if (o.memory() == 0 && !hessian_.defined()) restart_inverse_hessian(x.numel(), x.options());
  converged_ = false;
  torch::Tensor H_gradient;  // H g for the current gradient, when the last update computed it
  for (int64_t k = 0; k < o.max_iter(); ++k) {
    if (core::read_double(gradient.abs().max()) <= o.tolerance_grad()) {
      converged_ = true;
      break;
    }
    auto direction = H_gradient.defined() ? -H_gradient : -inverse_hessian_times(gradient);
    H_gradient = torch::Tensor();
    double slope = scalar_product(gradient, direction);
    if (!(slope < 0)) {  // not a descent direction (rounding in H): restart from steepest descent
      restart_inverse_hessian(x.numel(), x.options());
      direction = -gradient;
      slope = scalar_product(gradient, direction);
    }
    const double t0 = updates_ == 0
                          ? o.lr() * std::min(1.0, 1 / core::read_double(gradient.abs().sum()))
                          : o.lr();
    // The gradient of every sample, so the accepted one needs no second evaluation.
    std::vector<std::pair<double, torch::Tensor>> seen;
    const auto along = [&](double t) {
      set_parameters(x + direction * t);
      torch::Tensor g;
      const double value = evaluate(closure, g);
      seen.emplace_back(t, g);
      return LineSample{t, value, scalar_product(g, direction)};
    };
    StrongWolfeOptions search;
    search.tolerance_change = o.tolerance_change();
    const auto found = strong_wolfe(along, {0, loss, slope}, t0, search);
    if (found.accepted.t == 0) {
      set_parameters(x);
      if (updates_ == 0) {  // not even steepest descent lowers the loss: done
        converged_ = true;
        break;
      }
      restart_inverse_hessian(x.numel(), x.options());
      continue;
    }
    torch::Tensor next_gradient;
    for (const auto& [t, g] : seen)
      if (t == found.accepted.t) next_gradient = g;
    // The step as the parameters hold it (rounded to their dtype), like the accepted gradient.
    set_parameters(x + direction * found.accepted.t);
    const auto x_next = flat_parameters();
    const auto s = x_next - x;
    const auto y = next_gradient - gradient;
    // B s = t B d = -t g along d = -H g.
    H_gradient = update_inverse_hessian(s, y, -found.accepted.t * scalar_product(s, gradient),
                                        next_gradient);
    x = x_next;
    gradient = next_gradient;
    loss = found.accepted.value;
    ++iterations_;
    // Relative to the parameters: a loss that approaches zero keeps improving by ever smaller
    // absolute amounts, so a test on the loss change would stop too early.
    if (core::read_double(s.abs().max()) <=
        o.tolerance_change() * (1 + core::read_double(x.abs().max()))) {
      converged_ = true;
      break;
    }
  }
  return torch::full({}, loss, torch::kFloat64);
}

torch::Tensor QuasiNewton::block_direction(const torch::Tensor& gradient) {
  const auto restart = [&] {
    // A unit step along -H g then moves the parameters by at most 1 in sum: the same first
    // step as step() takes, whatever the other blocks' scales.
    const double scale = std::min(1.0, 1 / core::read_double(gradient.abs().sum()));
    restart_inverse_hessian(gradient.numel(), gradient.options(), scale);
  };
  if (options().memory() == 0 ? !hessian_.defined() : updates_ == 0) restart();
  auto direction = -inverse_hessian_times(gradient);
  if (!(scalar_product(gradient, direction) < 0) && core::read_double(gradient.abs().max()) > 0) {
    restart();
    direction = -inverse_hessian_times(gradient);
  }
  return direction;
}

void QuasiNewton::block_update(const torch::Tensor& s, const torch::Tensor& y,
                               const torch::Tensor& gradient, double step_length) {
  // The line search's curvature condition holds for the sum over blocks, not for each block: a
  // block whose gradient change mostly reflects its neighbours' steps can have s.y near zero or
  // negative, and 1 / s.y would blow its inverse Hessian up. Powell's damping (Nocedal & Wright,
  // procedure 18.2) mixes y with B s so that s.y >= 0.2 s.B.s; B s is known without B, since
  // the step went along d = -H g: B s = t B d = -t g.
  const auto Bs = gradient * -step_length;
  const double sBs = scalar_product(s, Bs), sy = scalar_product(s, y);
  if (sBs > 0 && sy < 0.2 * sBs) {
    const double theta = 0.8 * sBs / (sBs - sy);
    update_inverse_hessian(s, y * theta + Bs * (1 - theta), sBs);
  } else {
    update_inverse_hessian(s, y, sBs);
  }
  ++iterations_;
}

torch::Tensor QuasiNewton::rows_times(const torch::Tensor& full, int64_t offset) {
  if (!hessian_.defined()) {
    int64_t rows = 0;
    for (const auto& p : param_groups_.at(0).params()) rows += p.numel();
    hessian_ = identity_rows(rows, full.numel(), offset, full.options());
  }
  return matrix_times(hessian_, full);
}

torch::Tensor QuasiNewton::rows_update(const torch::Tensor& s, const torch::Tensor& y,
                                       const torch::Tensor& Hy, double sBs, int64_t offset,
                                       bool first, const torch::Tensor& times) {
  ++iterations_;
  auto product = update_rows(hessian_, offset, options().update(), first, s, y, Hy, sBs, times);
  if (!product) return matrix_times(hessian_, times);
  updates_ = first ? 1 : updates_ + 1;
  return *product;
}

void QuasiNewton::save(torch::serialize::OutputArchive& archive) const {
  archive.write("iterations", archived_number(static_cast<double>(iterations_)));
  archive.write("updates", archived_number(static_cast<double>(updates_)));
  if (hessian_.defined()) archive.write("inverse_hessian", hessian_);
  if (keeps_whole_updates_) {
    whole_updates_.save(archive);
  } else if (options().memory() > 0) {
    history_.save(archive);
    archive.write("fresh_scale", archived_number(fresh_scale_));
  }
}

void QuasiNewton::load(torch::serialize::InputArchive& archive) {
  iterations_ = static_cast<int64_t>(read_archived_number(archive, "iterations"));
  updates_ = static_cast<int64_t>(read_archived_number(archive, "updates"));
  torch::Tensor hessian;
  if (archive.try_read("inverse_hessian", hessian)) hessian_ = hessian;
  if (keeps_whole_updates_) {
    whole_updates_.load(archive);
  } else if (options().memory() > 0) {
    history_.load(archive);
    fresh_scale_ = read_archived_number(archive, "fresh_scale");
  }
}

}  // namespace tessera::train
