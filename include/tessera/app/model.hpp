#pragma once
/// Builds the network and loss groups of one subdomain from the case and the problem.
#include "tessera/app/decomposition.hpp"
#include "tessera/app/problem.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// The network options for subdomain `id` over `box` (its inputs are normalised over it);
/// `subdomains.<id>.network` overrides the case's network.
/// Whether the periodic condition named `condition` holds by construction in `network` (its
/// axis is one of the network's periodic inputs); then it gets no loss term.
bool periodic_by_construction(const io::Case& c, const Problem& p, const std::string& condition,
                              const nn::Network& network);

nn::MlpOptions network_options(const io::Case& c, const Problem& p, int id,
                               const geometry::Box& box);

/// The windowed sum of subdomain networks of an fbpinn decomposition (subdomain j initialised
/// from (seed, j, "init")).
nn::FbpinnOptions fbpinn_options(const io::Case& c, const Problem& p, const Decomposition& d);

/// Network, derivative engine, loss groups and interface sides of subdomain `id`. A condition
/// is sampled only where the subdomain touches its boundary part ("points" per subdomain); a
/// data condition keeps the observations inside the subdomain. Random streams are keyed by
/// (seed, id, purpose), never by rank; `replica` says which slice of every sample this rank
/// keeps. `parameters`: the shared trainable parameters (null: none).
std::unique_ptr<train::SubdomainModel> build_subdomain(
    const io::Case& c, const Problem& p, const Decomposition& d, int id,
    physics::Replica replica = {},
    std::shared_ptr<const physics::SharedParameters> parameters = nullptr);

/// What an Adam stage without `decay` or `warmup` gets: the rate falls by `default_decay_rate`
/// every iterations / 20 steps (to about a tenth at the end) after a linear warm-up over the
/// first iterations / 20 steps (at most 1000).
constexpr double default_decay_rate = 0.9;
int64_t default_decay_every(int64_t iterations);
int64_t default_warmup(int64_t iterations);

/// Whether the equations get causal weights: `training.causal.enabled`, by default on for
/// space-time problems (with or without data-parallel replicas).
bool causal_enabled(const io::Case& c);
/// The causal window of a subdomain whose part of the domain is `region` (nullopt: off).
std::optional<physics::CausalWindow> causal_window(const io::Case& c,
                                                   const geometry::Domain& region);

/// The dtype a stage trains in: its `dtype`, else float64 for the dense quasi-Newton
/// optimizers (their finish needs losses resolved below float32's rounding) and the run's
/// dtype for the others.
torch::Dtype stage_dtype(const io::StageSpec& stage, const Problem& p);

/// A stage's precision as run.json records it: its "precision", else "fp64" or "fp32" after
/// its dtype.
std::string stage_precision(const io::StageSpec& stage, const Problem& p);

/// Refuses a bfgs/ssbroyden stage whose dense inverse Hessian (n^2 doubles for a network of n
/// trainable values) would exceed `dense_hessian_limit_bytes` for some subdomain's network,
/// naming the stage, the estimate and the limit, before any work starts; and chooses the
/// layout of the matrix across subdomains (the stage's `hessian`, by default one joint matrix
/// where each subdomain's rows of it fit the limit, else one block per subdomain).
constexpr double dense_hessian_limit_bytes = 4.0 * 1024 * 1024 * 1024;
void plan_dense_hessians(const io::Case& c, const Problem& p, const Decomposition& d,
                         train::TrainingPlan& plan);

/// Trainable parameters of the subdomains' networks: all of them together and the largest one.
struct NetworkSizes {
  int64_t total = 0;
  int64_t largest = 0;
  int largest_id = 0;
};
NetworkSizes network_sizes(const io::Case& c, const Problem& p, const Decomposition& d);

/// A case planned from training.budget finishes with SSBroyden where its dense inverse Hessian
/// fits `dense_hessian_limit_bytes` for every subdomain's network, else with L-BFGS (no size
/// limit). Does nothing for a case with stages.
void choose_planned_finish(io::Case& c, const Problem& p, const Decomposition& d);

/// The trainer's plan from the case's training section.
train::TrainingPlan training_plan(const io::Case& c, const Problem& p);

}  // namespace tessera::app
