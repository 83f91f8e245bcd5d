// BFGS and SSBroyden over subdomains coupled in space. Run per subdomain with the neighbours'
// interface data frozen between exchanges, each optimizer chases a function that changes under
// it, and its curvature pairs mix two objectives. Here every evaluation exchanges afresh and one
// line search acts on the sum over all subdomains, so the whole decomposition is minimised as
// one problem and the Wolfe conditions hold for it.
//
// The objective is F = sum over subdomains of their own terms + each interface's terms counted
// once. Interface terms are symmetric, and a subdomain computes them against the neighbour's
// detached values, so its gradient is exactly dF/d(its parameters) while its loss counts the
// interface once from each side: F takes half of every interface value.
//
// The inverse Hessian is one dense matrix over all subdomains, distributed by rows (each
// subdomain's optimizer holds its parameters' rows; the default where it fits), or one dense
// block per subdomain (`hessian: "blocks"`), so that memory and work stay per subdomain and a
// block never needs another rank's parameters. A limited-memory method keeps the last curvature
// pairs of the whole vector instead, each subdomain holding its pieces of them and every dot
// product summed over the job (or, with blocks, each subdomain's own pairs).
//
// Every figure that steers the search is reduced in one slot per subdomain, filled by the
// subdomain's first replica and summed in subdomain order, so all ranks take the same decisions
// and the result does not depend on which rank owns which subdomain.
#include <algorithm>
#include <cmath>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton_runners.hpp"
#include "tessera/train/strong_wolfe.hpp"

namespace tessera::train {
namespace {

/// The owned blocks at one parameter point.
struct JointPoint {
  double value = 0;                     ///< F, the same on every rank
  std::vector<torch::Tensor> gradient;  ///< per owned subdomain, flat float64
  LocalLoss loss;                       ///< for the log
};

double dot_double(const torch::Tensor& a, const torch::Tensor& b) {
  return core::read_double(a.dot(b));
}

double largest_entry(const torch::Tensor& t) {
  return t.numel() ? core::read_double(t.abs().max()) : 0.0;
}

/// One joint stage's search: the blocks, the current point and what the last update computed.
class JointSearch {
 public:
  /// `memory`: the pairs a limited-memory method keeps (0: a dense inverse Hessian).
  JointSearch(const StageTools& tools, const StagePlan& stage, std::vector<QuasiNewton*> blocks,
              QuasiNewtonUpdate update, int64_t memory);
  /// Runs the stage from `first_step`; returns the steps done (fewer when it converged).
  int64_t run(int64_t first_step);

 private:
  /// The function and the owned gradients at the current parameters. Collective.
  /// With `direction`, also the slope along it (`slope`), summed in the same reduction as F.
  JointPoint evaluate(const std::vector<torch::Tensor>* direction = nullptr,
                      double* slope = nullptr);
  /// `width` figures per owned block -> their totals over the job (`largest`: the maxima).
  std::vector<double> totals(const std::vector<std::vector<double>>& per_block, std::size_t width,
                             bool largest);
  /// One figure per owned block -> its total over the job (`largest`: the maximum instead).
  double total(const std::function<double(std::size_t)>& figure, bool largest = false);
  /// The whole vector over all subdomains from each owned block's piece. Collective.
  torch::Tensor gather(const std::vector<torch::Tensor>& pieces);
  /// Whether the matrix has had no update since it (re)started, as its blocks record it.
  bool fresh();
  /// The search direction at `here` (`whole_gradient`: the gathered gradient, with a dense
  /// matrix over all subdomains).
  std::vector<torch::Tensor> direction(torch::Tensor& whole_gradient);
  double slope(const std::vector<torch::Tensor>& gradient,
               const std::vector<torch::Tensor>& direction);
  /// The first trial step along `d`, from `start_slope` (restarting H when `d` is no descent
  /// direction). Collective.
  double first_trial_step(std::vector<torch::Tensor>& d, double& start_slope,
                          const torch::Tensor& whole_gradient);
  /// Forgets the curvature gathered so far.
  void restart();
  /// Whether the inverse Hessian is one limited-memory history over the whole vector.
  bool whole_pairs() const { return stage_.joint_hessian && memory_ > 0; }
  /// The pairs' geometry as every rank holds it (a rank without blocks too), from the first
  /// subdomain's block. Collective.
  PairGeometry shared_geometry();
  /// Adds the accepted step's pair (at length `t` along d = -H g) to the whole-vector history.
  /// Collective.
  void add_pair(const std::vector<torch::Tensor>& steps,
                const std::vector<torch::Tensor>& gradient_changes, double t);
  /// Updates the inverse Hessian with the accepted step to `next` at length `t`; returns the
  /// largest step and parameter entries per owned block.
  std::vector<std::vector<double>> update(const JointPoint& next,
                                          const std::vector<torch::Tensor>& direction,
                                          const torch::Tensor& whole_gradient, double t);
  int64_t offset_of(std::size_t i) const { return offsets_.at(owned()[i]->id); }
  const std::vector<SubdomainModel*>& owned() const { return tools_.objective.owned(); }

  StageTools tools_;
  const StagePlan& stage_;
  std::vector<QuasiNewton*> blocks_;
  std::size_t n_;
  QuasiNewtonUpdate update_;
  int64_t memory_;
  PairGeometry geometry_;  ///< whole_pairs(): the pairs' scalars and products
  /// Parameter counts of every subdomain (in subdomain order), for the row-distributed matrix.
  std::vector<int64_t> offsets_;
  int64_t columns_ = 0;
  JointPoint here_;
  std::vector<torch::Tensor> x_;
  /// The whole gradient at `here_` and the rows' product with it, when the last update
  /// computed them (the product rides along the update's pass over the matrix).
  torch::Tensor next_whole_gradient_;
  std::vector<torch::Tensor> next_product_;
};

JointSearch::JointSearch(const StageTools& tools, const StagePlan& stage,
                         std::vector<QuasiNewton*> blocks, QuasiNewtonUpdate update, int64_t memory)
    : tools_(tools),
      stage_(stage),
      blocks_(std::move(blocks)),
      n_(blocks_.size()),
      update_(update),
      memory_(memory),
      geometry_(memory),
      next_product_(n_) {
  if (whole_pairs()) geometry_ = shared_geometry();
  if (stage.joint_hessian && memory_ == 0) {
    std::vector<std::vector<double>> counts(n_);
    for (std::size_t i = 0; i < n_; ++i)
      counts[i] = {static_cast<double>(blocks_[i]->flat_parameters().numel())};
    for (double count : tools_.reduction.subdomain_figures(counts, 1))
      offsets_.push_back(columns_), columns_ += std::llround(count);
  }
}

std::vector<double> JointSearch::totals(const std::vector<std::vector<double>>& per_block,
                                        std::size_t width, bool largest) {
  const auto figures = tools_.reduction.subdomain_figures(per_block, width);
  std::vector<double> sums(width, 0.0);
  for (std::size_t s = 0; s < static_cast<std::size_t>(tools_.reduction.subdomains()); ++s)
    for (std::size_t j = 0; j < width; ++j)
      sums[j] =
          largest ? std::max(sums[j], figures[s * width + j]) : sums[j] + figures[s * width + j];
  return sums;
}

double JointSearch::total(const std::function<double(std::size_t)>& figure, bool largest) {
  std::vector<std::vector<double>> per_block(n_);
  for (std::size_t i = 0; i < n_; ++i) per_block[i] = {figure(i)};
  return totals(per_block, 1, largest)[0];
}

JointPoint JointSearch::evaluate(const std::vector<torch::Tensor>* direction, double* slope) {
  for (auto* block : blocks_) block->zero_grad();
  JointPoint point;
  SubdomainValues parts;
  {
    core::ExclusiveTimer timer(tools_.times.compute_s, tools_.times.sync_s);
    point.loss = tools_.objective.checked_gradient_pass(parts);
  }
  std::vector<double> values(n_);
  for (std::size_t i = 0; i < n_; ++i) values[i] = parts[i].first + 0.5 * parts[i].second;
  tools_.reduction.sum_shares(tools_.objective.parameters(), values);
  for (auto* block : blocks_) point.gradient.push_back(block->flat_gradient());
  // One reduction for F and the slope: every collective costs latency, most where ranks share
  // cores.
  std::vector<std::vector<double>> figures(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    figures[i] = {values[i]};
    if (direction) figures[i].push_back(dot_double(point.gradient[i], (*direction)[i]));
  }
  const auto sums = totals(figures, direction ? 2 : 1, /*largest=*/false);
  point.value = sums[0];
  if (direction) *slope = sums[1];
  return point;
}

torch::Tensor JointSearch::gather(const std::vector<torch::Tensor>& pieces) {
  std::vector<double> whole(static_cast<std::size_t>(columns_), 0.0);
  for (std::size_t i = 0; i < n_ && tools_.reduction.fills_slots(); ++i) {
    // On the blocks' device: the sum travels through MPI on the host.
    const auto piece = core::read_to_host(pieces[i], pieces[i].scalar_type());
    std::copy_n(piece.data_ptr<double>(), piece.numel(), whole.begin() + offset_of(i));
  }
  {
    core::ScopedTimer timer(tools_.times.sync_s);
    tools_.reduction.comm().sum_in_place(whole);
  }
  return torch::tensor(whole, torch::kFloat64).to(n_ ? pieces[0].device() : torch::kCPU);
}

bool JointSearch::fresh() {
  if (whole_pairs()) return geometry_.empty();
  return total([&](std::size_t i) { return blocks_[i]->block_fresh() ? 0.0 : 1.0; }) == 0;
}

void JointSearch::restart() {
  for (auto* block : blocks_) block->block_restart();
  geometry_.clear();
}

PairGeometry JointSearch::shared_geometry() {
  // Every block holds the same geometry; the first subdomain's slot has it on every rank.
  std::vector<std::vector<double>> flat(n_);
  for (std::size_t i = 0; i < n_; ++i) flat[i] = blocks_[i]->history().geometry().flat();
  const auto width = static_cast<std::size_t>(
      total([&](std::size_t i) { return static_cast<double>(flat[i].size()); }, true));
  const auto figures = tools_.reduction.subdomain_figures(flat, width);
  PairGeometry geometry(memory_);
  geometry.set_flat(std::vector<double>(figures.begin(), figures.begin() + width));
  return geometry;
}

void JointSearch::add_pair(const std::vector<torch::Tensor>& steps,
                           const std::vector<torch::Tensor>& gradient_changes, double t) {
  // The new vectors' products with every kept pair's and with themselves, in one sum; then
  // s.g and the parameter count, which the self-scaled rule needs.
  std::vector<std::vector<double>> figures(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    figures[i] = pair_figures(blocks_[i]->history(), steps[i], gradient_changes[i]);
    figures[i].insert(figures[i].end(), {dot_double(steps[i], here_.gradient[i]),
                                         static_cast<double>(steps[i].numel())});
  }
  const std::size_t kept = geometry_.size();
  const auto dots = totals(figures, 4 * kept + 5, /*largest=*/false);
  // B s = t B d = -t g along d = -H g.
  const double sBs = -t * dots[4 * kept + 3];
  const auto scalars = update_ == QuasiNewtonUpdate::ssbroyden
                           ? self_scaled_pair_scalars(geometry_, dots, sBs, dots[4 * kept + 4])
                           : pair_scalars(dots[4 * kept + 1], dots[4 * kept + 2]);
  if (!scalars) return;
  for (std::size_t i = 0; i < n_; ++i)
    blocks_[i]->history().push(steps[i], gradient_changes[i], *scalars, dots);
  geometry_.push(*scalars, dots);
}

double JointSearch::first_trial_step(std::vector<torch::Tensor>& d, double& start_slope,
                                     const torch::Tensor& whole_gradient) {
  if (!stage_.joint_hessian) return stage_.lr;
  if (!(start_slope < 0)) {  // rounding in H: restart from steepest descent
    restart();
    for (std::size_t i = 0; i < n_; ++i) d[i] = -here_.gradient[i];
    start_slope = slope(here_.gradient, d);
  }
  if (!fresh()) return stage_.lr;
  // The first step of a fresh matrix moves the parameters by at most lr in sum.
  const double size =
      whole_pairs()
          ? total([&](std::size_t i) { return core::read_double(here_.gradient[i].abs().sum()); })
          : core::read_double(whole_gradient.abs().sum());
  return stage_.lr * std::min(1.0, 1 / size);
}

double JointSearch::slope(const std::vector<torch::Tensor>& gradient,
                          const std::vector<torch::Tensor>& direction) {
  return total([&](std::size_t i) { return dot_double(gradient[i], direction[i]); });
}

std::vector<torch::Tensor> JointSearch::direction(torch::Tensor& whole_gradient) {
  std::vector<torch::Tensor> d(n_);
  if (!stage_.joint_hessian) {
    for (std::size_t i = 0; i < n_; ++i) d[i] = blocks_[i]->block_direction(here_.gradient[i]);
    return d;
  }
  if (whole_pairs()) {
    std::vector<const CurvatureHistory*> histories;
    for (auto* block : blocks_) histories.push_back(&block->history());
    const auto sum = [&](const std::vector<std::vector<double>>& figures, std::size_t width) {
      return totals(figures, width, /*largest=*/false);
    };
    const auto product = history_times(geometry_, histories, here_.gradient, sum);
    for (std::size_t i = 0; i < n_; ++i) d[i] = -product[i];
    return d;
  }
  whole_gradient = next_whole_gradient_.defined() ? next_whole_gradient_ : gather(here_.gradient);
  for (std::size_t i = 0; i < n_; ++i)
    d[i] = next_product_[i].defined() ? -next_product_[i]
                                      : -blocks_[i]->rows_times(whole_gradient, offset_of(i));
  next_whole_gradient_ = torch::Tensor();
  for (auto& product : next_product_) product = torch::Tensor();
  return d;
}

std::vector<std::vector<double>> JointSearch::update(const JointPoint& next,
                                                     const std::vector<torch::Tensor>& direction,
                                                     const torch::Tensor& whole_gradient,
                                                     double t) {
  std::vector<std::vector<double>> change(n_);
  std::vector<torch::Tensor> steps(n_), gradient_changes(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    // The step as the parameters hold it (rounded to their dtype), like the accepted gradient.
    blocks_[i]->set_parameters(x_[i] + direction[i] * t);
    const auto x_next = blocks_[i]->flat_parameters();
    steps[i] = x_next - x_[i];
    gradient_changes[i] = next.gradient[i] - here_.gradient[i];
    change[i] = {largest_entry(steps[i]), largest_entry(x_next)};
    x_[i] = x_next;
  }
  if (!stage_.joint_hessian) {
    for (std::size_t i = 0; i < n_; ++i)
      blocks_[i]->block_update(steps[i], gradient_changes[i], here_.gradient[i], t);
    return change;
  }
  if (whole_pairs()) {
    add_pair(steps, gradient_changes, t);
    return change;
  }
  next_whole_gradient_ = gather(next.gradient);
  // Each entry is the same difference the block would have sent.
  const auto s = gather(steps), y = next_whole_gradient_ - whole_gradient;
  std::vector<torch::Tensor> Hy_pieces(n_);
  for (std::size_t i = 0; i < n_; ++i) Hy_pieces[i] = blocks_[i]->rows_times(y, offset_of(i));
  const auto Hy = gather(Hy_pieces);
  // B s = t B d = -t g along d = -H g.
  const double sBs = -t * dot_double(s, whole_gradient);
  const bool first = fresh();
  for (std::size_t i = 0; i < n_; ++i)
    next_product_[i] =
        blocks_[i]->rows_update(s, y, Hy, sBs, offset_of(i), first, next_whole_gradient_);
  return change;
}

int64_t JointSearch::run(int64_t first_step) {
  here_ = evaluate();
  for (auto* block : blocks_) x_.push_back(block->flat_parameters());
  int64_t done = first_step;
  bool converged = false;
  while (done < stage_.iterations && !tools_.host.stopping() && !converged) {
    const double gradient_size =
        total([&](std::size_t i) { return largest_entry(here_.gradient[i]); }, true);
    if (gradient_size <= stage_.tolerance) break;
    torch::Tensor whole_gradient;
    auto d = direction(whole_gradient);
    double start_slope = slope(here_.gradient, d);
    const double first_step_length = first_trial_step(d, start_slope, whole_gradient);
    // Every sample, so the accepted one needs no second evaluation.
    std::vector<std::pair<double, JointPoint>> seen;
    const auto along = [&](double t) {
      for (std::size_t i = 0; i < n_; ++i) blocks_[i]->set_parameters(x_[i] + d[i] * t);
      double slope_there = 0;
      seen.emplace_back(t, evaluate(&d, &slope_there));
      return LineSample{t, seen.back().second.value, slope_there};
    };
    StrongWolfeOptions search;
    search.tolerance_change = QuasiNewtonOptions().tolerance_change();
    const auto found =
        strong_wolfe(along, {0, here_.value, start_slope}, first_step_length, search);
    if (found.accepted.t == 0) {
      for (std::size_t i = 0; i < n_; ++i) blocks_[i]->set_parameters(x_[i]);
      // Not even the scaled steepest descent lowers the loss: done. Otherwise start again from
      // it (the curvature gathered so far misled the search).
      converged = fresh();
      restart();
      continue;
    }
    JointPoint next;
    for (auto& [t, point] : seen)
      if (t == found.accepted.t) next = std::move(point);
    const auto change = update(next, d, whole_gradient, found.accepted.t);
    here_ = std::move(next);
    ++done;
    tools_.host.iterations_done(1, done, here_.loss, stage_.optimizer, stage_.lr);
    // Relative to the parameters, as in QuasiNewton::step().
    const auto moved = totals(change, 2, /*largest=*/true);
    converged = moved[0] <= search.tolerance_change * (1 + moved[1]);
  }
  return done;
}

}  // namespace

void JointQuasiNewtonRunner::run(const StagePlan& stage, int64_t first_step) {
  tools_.objective.set_causal(false);
  optimizers_.clear();
  std::vector<QuasiNewton*> blocks;
  for (auto* s : tools_.objective.owned()) {
    optimizers_.push_back(std::make_unique<QuasiNewton>(s->network->parameters(),
                                                        QuasiNewtonOptions(update_)
                                                            .lr(stage.lr)
                                                            .tolerance_grad(stage.tolerance)
                                                            .memory(memory_)
                                                            .whole_updates(stage.broyden_updates)));
    blocks.push_back(static_cast<QuasiNewton*>(optimizers_.back().get()));
  }
  // Shared parameters hold still (several subdomains).
  tools_.host.adopt(optimizer_pointers(), /*shared_last=*/false);
  const int64_t done =
      JointSearch(tools_, stage, std::move(blocks), update_, memory_).run(first_step);
  // A converged stage still counts its iterations, like the per-subdomain optimizers.
  if (!tools_.host.stopping() && done < stage.iterations) tools_.host.skip(stage.iterations - done);
}

}  // namespace tessera::train
