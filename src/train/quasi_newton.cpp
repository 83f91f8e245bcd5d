// Dense quasi-Newton iterations. Each step() call starts from a fresh evaluation of the closure:
// between calls the trainer may exchange interface data, which changes the function, so the
// only state carried over (and checkpointed) is the inverse-Hessian approximation.
#include "tessera/train/quasi_newton.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train {
namespace {

torch::Tensor number(double value) { return torch::full({}, value, torch::kFloat64); }

double read_number(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<double>();
}

double scalar_product(const torch::Tensor& a, const torch::Tensor& b) {
  return a.dot(b).item<double>();
}

/// One term c u w^T of a low-rank update.
struct Outer {
  double c;
  torch::Tensor u, w;
};

/// H <- scale H + sum_k c_k u_k w_k^T, for H of any shape (u_k its rows, w_k its columns). On the
/// CPU in one pass over H: the matrix is the largest object of the optimizer (n^2 doubles), so
/// each pass costs a full sweep of memory.
void low_rank_update(torch::Tensor& H, double scale, const std::vector<Outer>& terms) {
  if (!H.is_cpu() || !H.is_contiguous()) {
    H.mul_(scale);
    for (const auto& t : terms) H.addr_(t.u, t.w, 1, t.c);
    return;
  }
  TESSERA_ASSERT(terms.size() <= 4, "low_rank_update takes at most 4 terms");
  const int64_t rows = H.size(0), n = H.size(1);
  std::vector<torch::Tensor> kept;
  std::vector<const double*> u, w;
  std::vector<double> c;
  for (const auto& t : terms) {
    kept.push_back(t.u.contiguous()), kept.push_back(t.w.contiguous());
    u.push_back(kept[kept.size() - 2].data_ptr<double>());
    w.push_back(kept.back().data_ptr<double>());
    c.push_back(t.c);
  }
  double* h = H.data_ptr<double>();
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double* row = h + i * n;
      double coefficient[4] = {0, 0, 0, 0};
      for (std::size_t k = 0; k < c.size(); ++k) coefficient[k] = c[k] * u[k][i];
      for (int64_t j = 0; j < n; ++j) {
        double value = scale * row[j];
        for (std::size_t k = 0; k < c.size(); ++k) value += coefficient[k] * w[k][j];
        row[j] = value;
      }
    }
  });
}

}  // namespace

QuasiNewton::QuasiNewton(std::vector<torch::Tensor> parameters, QuasiNewtonOptions options)
    : Optimizer({torch::optim::OptimizerParamGroup(std::move(parameters))},
                std::make_unique<QuasiNewtonOptions>(options)) {}

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
    value = closure().item<double>();
  }
  gradient = flat_gradient();
  return value;
}

void QuasiNewton::update_inverse_hessian(const torch::Tensor& s, const torch::Tensor& y,
                                         double sBs) {
  const auto Hy = hessian_.mv(y);
  if (update_rows(hessian_, 0, options().update(), updates_ == 0, s, y, Hy, sBs)) ++updates_;
}

bool update_rows(torch::Tensor& H, int64_t offset, QuasiNewtonUpdate method, bool first,
                 const torch::Tensor& s, const torch::Tensor& y, torch::Tensor Hy, double sBs) {
  const double sy = scalar_product(s, y);
  // Without positive curvature along the step the update would lose positive definiteness.
  if (!(sy > 1e-300)) return false;
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
    low_rank_update(
        H, 1, {{-rho, rows(Hy), s}, {-rho, rows(s), Hy}, {rho * (1 + rho * yHy), rows(s), s}});
    return true;
  }
  // Self-scaled Broyden: H <- (H - Hy Hy^T / yHy + phi yHy v v^T) / tau + rho s s^T with
  // v = rho s - Hy / yHy, where theta (the Broyden-family member, through phi) and tau (the
  // scaling) follow from h = yHy / s.y and b = s^T B s / s.y (B = H^-1).
  const double yHy = scalar_product(y, Hy);
  const double h = yHy * rho, b = sBs * rho, a = h * b - 1;
  double theta = 0;  // BFGS
  if (std::abs(a) > 1e-12 && b > 0) {
    const double rho_minus = std::min(1.0, h * (1 - std::sqrt(std::abs(a) / (1 + a))));
    const double theta_minus = (rho_minus - 1) / a, theta_plus = 1 / rho_minus;
    theta = std::max(theta_minus, std::min(theta_plus, (1 - b) / b));
  }
  double tau = 0;
  if (first) {
    tau = h / (1 + a * theta);
  } else {
    const double sigma = 1 + theta * a;
    const double sigma_root = std::pow(std::abs(sigma), 1 / (1 - n));
    const double limit = b > 0 ? std::min(1.0, 1 / b) : 1.0;
    tau =
        theta <= 0 ? std::min(limit * sigma_root, sigma) : limit * std::min(sigma_root, 1 / theta);
  }
  if (!(tau > 0) || !std::isfinite(tau)) tau = 1;
  const double phi = (1 - theta) / (1 + a * theta);
  const auto v = s * rho - Hy / yHy;
  low_rank_update(
      H, 1 / tau,
      {{-1 / (yHy * tau), rows(Hy), Hy}, {phi * yHy / tau, rows(v), v}, {rho, rows(s), s}});
  return true;
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
  if (!hessian_.defined()) hessian_ = torch::eye(x.numel(), x.options());
  converged_ = false;
  for (int64_t k = 0; k < o.max_iter(); ++k) {
    if (gradient.abs().max().item<double>() <= o.tolerance_grad()) {
      converged_ = true;
      break;
    }
    auto direction = -hessian_.mv(gradient);
    double slope = scalar_product(gradient, direction);
    if (!(slope < 0)) {  // not a descent direction (rounding in H): restart from steepest descent
      hessian_ = torch::eye(x.numel(), hessian_.options());
      updates_ = 0;
      direction = -gradient;
      slope = scalar_product(gradient, direction);
    }
    const double t0 =
        updates_ == 0 ? o.lr() * std::min(1.0, 1 / gradient.abs().sum().item<double>()) : o.lr();
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
      hessian_ = torch::eye(x.numel(), hessian_.options());
      updates_ = 0;
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
    update_inverse_hessian(s, y, -found.accepted.t * scalar_product(s, gradient));
    x = x_next;
    gradient = next_gradient;
    loss = found.accepted.value;
    ++iterations_;
    // Relative to the parameters: a loss that approaches zero keeps improving by ever smaller
    // absolute amounts, so a test on the loss change would stop too early.
    if (s.abs().max().item<double>() <= o.tolerance_change() * (1 + x.abs().max().item<double>())) {
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
    const double scale = std::min(1.0, 1 / gradient.abs().sum().item<double>());
    hessian_ = torch::eye(gradient.numel(), gradient.options()) * scale;
    updates_ = 0;
  };
  if (!hessian_.defined()) restart();
  auto direction = -hessian_.mv(gradient);
  if (!(scalar_product(gradient, direction) < 0) && gradient.abs().max().item<double>() > 0) {
    restart();
    direction = -hessian_.mv(gradient);
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
  return hessian_.mv(full);
}

bool QuasiNewton::rows_update(const torch::Tensor& s, const torch::Tensor& y,
                              const torch::Tensor& Hy, double sBs, int64_t offset, bool first) {
  ++iterations_;
  const bool updated = update_rows(hessian_, offset, options().update(), first, s, y, Hy, sBs);
  if (updated) updates_ = first ? 1 : updates_ + 1;
  return updated;
}

void QuasiNewton::save(torch::serialize::OutputArchive& archive) const {
  archive.write("iterations", number(static_cast<double>(iterations_)));
  archive.write("updates", number(static_cast<double>(updates_)));
  if (hessian_.defined()) archive.write("inverse_hessian", hessian_);
}

void QuasiNewton::load(torch::serialize::InputArchive& archive) {
  iterations_ = static_cast<int64_t>(read_number(archive, "iterations"));
  updates_ = static_cast<int64_t>(read_number(archive, "updates"));
  torch::Tensor hessian;
  if (archive.try_read("inverse_hessian", hessian)) hessian_ = hessian;
}

}  // namespace tessera::train
