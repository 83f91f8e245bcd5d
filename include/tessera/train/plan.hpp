#pragma once
/// What the trainer is asked to do: stages, logging and weighting, in plain values (the app
/// translates the case file into this; train knows no file formats).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "tessera/physics/residual_sampling.hpp"

namespace tessera::train {

/// How the networks' matrix products run in a stage: in the stage's dtype, with TF32 on CUDA,
/// or with bfloat16 operands (float32 parameters and results).
enum class Products { dtype, tf32, bf16 };

struct StagePlan {
  /// The optimizer as the case format names it; its runner trains the stage (stage_runner.hpp).
  std::string optimizer = "adam";
  int64_t iterations = 1000;
  double lr = 1e-3;
  std::optional<double> decay_rate;  ///< adam: lr * rate^(floor(k / decay_every))
  int64_t decay_every = 1000;
  int64_t warmup = 0;          ///< adam: the rate rises linearly over the first `warmup` iterations
  std::optional<double> clip;  ///< adam: max global gradient norm
  int64_t history = 1000;      ///< limited-memory quasi-Newton: curvature pairs kept
  /// Limited memory: each pair's update divides the approximation before it by the
  /// self-scaled Broyden rule's tau (limited_memory.hpp), instead of the classic base.
  bool self_scaled = false;
  /// Limited memory: the last `history` updates of the self-scaled Broyden method, each kept
  /// whole (unrolled_broyden.hpp), instead of curvature pairs; per subdomain.
  bool broyden_updates = false;
  double tolerance = 1e-9;        ///< quasi-Newton: stop when the largest gradient entry is below
  std::optional<int64_t> points;  ///< collocation points from this stage on
  /// The networks, points and shared parameters are converted to this at the stage's start.
  torch::Dtype dtype = torch::kFloat32;
  Products products = Products::dtype;
  /// Quasi-Newton across subdomains coupled in space: one inverse Hessian over all of them (a
  /// dense one distributed by rows, each subdomain's optimizer holding its parameters' rows, or
  /// the curvature pairs of the whole vector), instead of one per subdomain.
  bool joint_hessian = false;
};

/// Loss balancing: every `every` Adam iterations each term's weight moves toward the balancing
/// weight of its stiffness, with moving-average factor `alpha` (the rule: LossBalancer).
struct AdaptiveWeighting {
  bool enabled = false;
  int64_t every = 100;
  double alpha = 0.9;
};

struct TrainingPlan {
  std::vector<StagePlan> stages;
  int64_t log_every = 100;
  int64_t resample_every = 0;  ///< 0: never (Adam stages only)
  /// Residual-based redistribution of the collocation points in Adam stages (nullopt: off; the
  /// equation groups then skip the uniform redraws of resample_every).
  std::optional<physics::ResidualSampling> adaptive_points;
  std::map<std::string, double> weights;  ///< term name -> weight (missing: 1)
  AdaptiveWeighting adaptive;
  std::optional<double> time_limit;  ///< seconds
  /// training.budget (seconds): the last stage ends, and the run is complete, at the first log
  /// iteration after which one more log interval as long as the last one would pass it.
  std::optional<double> budget_s;
  /// Gradient accumulation: a subdomain whose largest point set exceeds this many points is
  /// evaluated in ceil(largest / batch_points) parts per pass, each backpropagated on its own
  /// (0: one pass over every point).
  int64_t batch_points = 0;
  int64_t checkpoint_every = 0;  ///< 0: only at the end and when stopped
};

/// Adam's learning rate at iteration k (0-based) of a stage.
double scheduled_lr(const StagePlan& stage, int64_t k);

}  // namespace tessera::train
