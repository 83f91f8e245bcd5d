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

  // -> one total per figure over the job; `largest`: the maximum over the subdomains instead of
  // the sum.
  const auto reduce = [&](const std::vector<std::vector<double>>& per_block, std::size_t width,
                          bool largest) {
    const auto figures = subdomain_figures(per_block, width);
    std::vector<double> totals(width, 0.0);
    for (std::size_t s = 0; s < static_cast<std::size_t>(subdomains_); ++s)
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
      core::ExclusiveTimer timer(compute_s_, sync_s_);
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

  // Parameter counts of every subdomain (in subdomain order), for the row-distributed matrix.
  std::vector<int64_t> offsets;
  int64_t columns = 0;
  if (stage.joint_hessian) {
    const auto counts = subdomain_figures(
        per_block([&](std::size_t i) {
          return std::vector<double>{static_cast<double>(blocks[i]->flat_parameters().numel())};
        }),
        1);
    for (double count : counts) offsets.push_back(columns), columns += std::llround(count);
  }
  const auto offset_of = [&](std::size_t i) { return offsets.at(owned_[i]->id); };
  // The whole vector over all subdomains from each owned block's piece.
  // On the blocks' device: the sum travels through MPI on the host.
  const auto gather = [&](const std::vector<torch::Tensor>& pieces) {
    std::vector<double> whole(static_cast<std::size_t>(columns), 0.0);
    for (std::size_t i = 0; i < n && first_replica; ++i) {
      const auto piece = pieces[i].to(torch::kCPU).contiguous();
      std::copy_n(piece.data_ptr<double>(), piece.numel(), whole.begin() + offset_of(i));
    }
    {
      core::ScopedTimer timer(sync_s_);
      comm_.sum_in_place(whole);
    }
    return torch::tensor(whole, torch::kFloat64).to(n ? pieces[0].device() : torch::kCPU);
  };
  // Whether the dense matrix has had no update since it (re)started, as its blocks record it.
  const auto fresh = [&] {
    return reduce(per_block([&](std::size_t i) {
                    return std::vector<double>{blocks[i]->block_fresh() ? 0.0 : 1.0};
                  }),
                  1, false)[0] == 0;
  };

  JointPoint here = evaluate();
  // The whole gradient at `here` and the rows' product with it, when the last update computed
  // them (the product rides along the update's pass over the matrix).
  torch::Tensor next_whole_gradient;
  std::vector<torch::Tensor> next_product(n);
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
    torch::Tensor whole_gradient;
    double first_step_length = stage.lr;
    if (stage.joint_hessian) {
      whole_gradient = next_whole_gradient.defined() ? next_whole_gradient : gather(here.gradient);
      for (std::size_t i = 0; i < n; ++i)
        direction[i] = next_product[i].defined()
                           ? -next_product[i]
                           : -blocks[i]->rows_times(whole_gradient, offset_of(i));
      next_whole_gradient = torch::Tensor();
      for (auto& product : next_product) product = torch::Tensor();
    } else {
      for (std::size_t i = 0; i < n; ++i)
        direction[i] = blocks[i]->block_direction(here.gradient[i]);
    }
    const auto slope_of = [&](const std::vector<torch::Tensor>& gradient) {
      return reduce(per_block([&](std::size_t i) {
                      return std::vector<double>{dot_double(gradient[i], direction[i])};
                    }),
                    1, false)[0];
    };
    double slope = slope_of(here.gradient);
    if (stage.joint_hessian) {
      if (!(slope < 0)) {  // rounding in H: restart from steepest descent, as QuasiNewton::step()
        for (std::size_t i = 0; i < n; ++i)
          blocks[i]->block_restart(), direction[i] = -here.gradient[i];
        slope = slope_of(here.gradient);
      }
      // The first step of a fresh matrix moves the parameters by at most lr in sum.
      if (fresh())
        first_step_length *= std::min(1.0, 1 / whole_gradient.abs().sum().item<double>());
    }
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
    const auto found = strong_wolfe(along, {0, here.value, slope}, first_step_length, search);
    if (found.accepted.t == 0) {
      for (std::size_t i = 0; i < n; ++i) blocks[i]->set_parameters(x[i]);
      // Not even the scaled steepest descent lowers the loss: done. Otherwise start again from
      // it (the curvature gathered so far misled the search).
      converged = fresh();
      for (auto* block : blocks) block->block_restart();
      continue;
    }
    JointPoint next;
    for (auto& [t, point] : seen)
      if (t == found.accepted.t) next = std::move(point);
    std::vector<std::vector<double>> change(n);
    std::vector<torch::Tensor> steps(n), gradient_changes(n);
    for (std::size_t i = 0; i < n; ++i) {
      // The step as the parameters hold it (rounded to their dtype), like the accepted gradient.
      blocks[i]->set_parameters(x[i] + direction[i] * found.accepted.t);
      const auto x_next = blocks[i]->flat_parameters();
      steps[i] = x_next - x[i];
      gradient_changes[i] = next.gradient[i] - here.gradient[i];
      change[i] = {largest_entry(steps[i]), largest_entry(x_next)};
      x[i] = x_next;
    }
    if (stage.joint_hessian) {
      next_whole_gradient = gather(next.gradient);
      // Each entry is the same difference the block would have sent.
      const auto s = gather(steps), y = next_whole_gradient - whole_gradient;
      std::vector<torch::Tensor> Hy_pieces(n);
      for (std::size_t i = 0; i < n; ++i) Hy_pieces[i] = blocks[i]->rows_times(y, offset_of(i));
      const auto Hy = gather(Hy_pieces);
      // B s = t B d = -t g along d = -H g.
      const double sBs = -found.accepted.t * dot_double(s, whole_gradient);
      const bool first = fresh();
      for (std::size_t i = 0; i < n; ++i)
        next_product[i] =
            blocks[i]->rows_update(s, y, Hy, sBs, offset_of(i), first, next_whole_gradient);
    } else {
      for (std::size_t i = 0; i < n; ++i)
        blocks[i]->block_update(steps[i], gradient_changes[i], here.gradient[i], found.accepted.t);
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
