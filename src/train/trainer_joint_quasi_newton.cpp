// BFGS and SSBroyden over subdomains coupled in space. Run per subdomain with the neighbours'
// interface data frozen between exchanges, each optimizer chases a function that changes under
// it, and its curvature pairs mix two objectives. Here every evaluation exchanges afresh and one
// line search acts on the sum over all subdomains, so the whole decomposition is minimised as
// one problem and the Wolfe conditions hold for it.
//
// The objective is F = sum over subdomains of their own terms + each interface's terms counted
// once. Interface terms are symmetric, and a subdomain computes them against the neighbour's
// detached values, so its gradient is exactly dF/d(its parameters) while its loss counts the
// interface once from each side: F takes half of every interface value. The inverse Hessian is
// block-diagonal (one dense block per subdomain, stored in that subdomain's optimizer), so
// memory and work stay per subdomain and a block never needs another rank's parameters.
//
// Every figure that steers the search is reduced in one slot per subdomain, filled by the
// subdomain's first replica and summed in subdomain order, so all ranks take the same decisions
// and the result does not depend on which rank owns which subdomain.
#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton.hpp"
#include "tessera/train/strong_wolfe.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::train {
namespace {

/// The owned blocks at one parameter point.
struct JointPoint {
  double value = 0;                     ///< F, the same on every rank
  std::vector<torch::Tensor> gradient;  ///< per owned subdomain, flat float64
  LocalLoss loss;                       ///< for the log
};

double dot_double(const torch::Tensor& a, const torch::Tensor& b) {
  return a.dot(b).item<double>();
}

double largest_entry(const torch::Tensor& t) {
  return t.numel() ? t.abs().max().item<double>() : 0.0;
}

}  // namespace

bool Trainer::coupled(bool in_time) const {
  bool found = false;
  for (auto* s : owned_)
    for (const auto& side : s->interfaces) found = found || side->across_time() == in_time;
  return comm_.any(found);
}

void Trainer::run_joint_quasi_newton(const StagePlan& stage, int64_t first_step) {
  auto& optimizers = optimizers_;
  optimizers.clear();
  parameter_optimizer_ = false;  // shared parameters hold still (several subdomains)
  const auto update = stage.optimizer == OptimizerKind::bfgs ? QuasiNewtonUpdate::bfgs
                                                             : QuasiNewtonUpdate::ssbroyden;
  std::vector<QuasiNewton*> blocks;
  for (auto* s : owned_) {
    optimizers.push_back(std::make_unique<QuasiNewton>(
        s->network->parameters(),
        QuasiNewtonOptions(update).lr(stage.lr).tolerance_grad(stage.tolerance)));
    blocks.push_back(static_cast<QuasiNewton*>(optimizers.back().get()));
  }
  restore_optimizers();
  const std::size_t n = owned_.size();
  const bool first_replica = !sync_.replicas || sync_.replicas->communicator().rank() == 0;

  // `width` figures per owned block -> one total per figure over the job, reduced in subdomain
  // slots (see above); `largest`: the maximum over the subdomains instead of the sum.
  const auto reduce = [&](const std::vector<std::vector<double>>& per_block, std::size_t width,
                          bool largest) {
    const std::size_t slots = static_cast<std::size_t>(subdomains_);
    std::vector<double> figures(slots * width, 0.0);
    for (std::size_t i = 0; i < n && first_replica; ++i)
      for (std::size_t j = 0; j < width; ++j)
        figures[static_cast<std::size_t>(owned_[i]->id) * width + j] = per_block[i][j];
    {
      core::ScopedTimer timer(sync_s_);
      comm_.sum_in_place(figures);
    }
    std::vector<double> totals(width, 0.0);
    for (std::size_t s = 0; s < slots; ++s)
      for (std::size_t j = 0; j < width; ++j)
        totals[j] = largest ? std::max(totals[j], figures[s * width + j])
                            : totals[j] + figures[s * width + j];
    return totals;
  };
  const auto per_block = [&](const auto& figure) {
    std::vector<std::vector<double>> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = figure(i);
    return values;
  };

  const auto evaluate = [&] {
    for (auto* block : blocks) block->zero_grad();
    JointPoint point;
    std::vector<std::pair<double, double>> parts;
    {
      core::ScopedTimer timer(compute_s_);
      point.loss = exchange_and_loss(/*create_graph=*/true, /*backward_interior=*/true,
                                     /*stop_on_nonfinite=*/true, &parts);
      backpropagate_rest(point.loss);
    }
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = parts[i].first + 0.5 * parts[i].second;
    if (sync_.replicas && n > 0) {
      // Each replica holds a share of its subdomains' terms: the group's sums are the whole.
      core::ScopedTimer timer(sync_s_);
      sync_.replicas->sum_gradients(owned_parameters(), &values);
    }
    for (auto* block : blocks) point.gradient.push_back(block->flat_gradient());
    point.value = reduce(per_block([&](std::size_t i) { return std::vector<double>{values[i]}; }),
                         1, false)[0];
    return point;
  };

  JointPoint here = evaluate();
  std::vector<torch::Tensor> x;
  for (auto* block : blocks) x.push_back(block->flat_parameters());
  int64_t done = first_step;
  bool converged = false;
  while (done < stage.iterations && !stop_ && !converged) {
    const auto gradient_size = reduce(per_block([&](std::size_t i) {
                                        return std::vector<double>{largest_entry(here.gradient[i])};
                                      }),
                                      1, true)[0];
    if (gradient_size <= stage.tolerance) break;
    std::vector<torch::Tensor> direction(n);
    for (std::size_t i = 0; i < n; ++i) direction[i] = blocks[i]->block_direction(here.gradient[i]);
    const auto slope_of = [&](const std::vector<torch::Tensor>& gradient) {
      return reduce(per_block([&](std::size_t i) {
                      return std::vector<double>{dot_double(gradient[i], direction[i])};
                    }),
                    1, false)[0];
    };
    // Every sample, so the accepted one needs no second evaluation.
    std::vector<std::pair<double, JointPoint>> seen;
    const auto along = [&](double t) {
      for (std::size_t i = 0; i < n; ++i) blocks[i]->set_parameters(x[i] + direction[i] * t);
      seen.emplace_back(t, evaluate());
      const auto& point = seen.back().second;
      return LineSample{t, point.value, slope_of(point.gradient)};
    };
    StrongWolfeOptions search;
    search.tolerance_change = QuasiNewtonOptions().tolerance_change();
    const auto found =
        strong_wolfe(along, {0, here.value, slope_of(here.gradient)}, stage.lr, search);
    if (found.accepted.t == 0) {
      for (std::size_t i = 0; i < n; ++i) blocks[i]->set_parameters(x[i]);
      const auto curved = reduce(per_block([&](std::size_t i) {
                                   return std::vector<double>{blocks[i]->block_fresh() ? 0.0 : 1.0};
                                 }),
                                 1, false)[0];
      // Not even the scaled steepest descent lowers the loss: done. Otherwise start again from
      // it (the curvature gathered so far misled the search).
      converged = curved == 0;
      for (auto* block : blocks) block->block_restart();
      continue;
    }
    JointPoint next;
    for (auto& [t, point] : seen)
      if (t == found.accepted.t) next = std::move(point);
    std::vector<std::vector<double>> change(n);
    for (std::size_t i = 0; i < n; ++i) {
      // The step as the parameters hold it (rounded to their dtype), like the accepted gradient.
      blocks[i]->set_parameters(x[i] + direction[i] * found.accepted.t);
      const auto x_next = blocks[i]->flat_parameters();
      const auto s = x_next - x[i];
      blocks[i]->block_update(s, next.gradient[i] - here.gradient[i], here.gradient[i],
                              found.accepted.t);
      change[i] = {largest_entry(s), largest_entry(x_next)};
      x[i] = x_next;
    }
    here = std::move(next);
    ++done;
    ++iteration_;
    if (iteration_ % plan_.log_every == 0) {
      log(here.loss, optimizer_name(stage.optimizer), stage.lr, false);
      after_log(done);
    }
    // Relative to the parameters, as in QuasiNewton::step().
    const auto moved = reduce(change, 2, true);
    converged = moved[0] <= search.tolerance_change * (1 + moved[1]);
  }
  // A converged stage still counts its iterations, like the per-subdomain optimizers.
  if (!stop_ && done < stage.iterations) iteration_ += stage.iterations - done;
}

}  // namespace tessera::train
