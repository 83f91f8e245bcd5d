#pragma once
/// Builds the network and loss groups of one subdomain from the case and the problem.
#include "tessera/app/decomposition.hpp"
#include "tessera/app/problem.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// The network options for subdomain `id` over `box` (its inputs are normalised over it);
/// `subdomains.<id>.network` overrides the case's network.
nn::MlpOptions network_options(const io::Case& c, const Problem& p, int id,
                               const geometry::Box& box);

/// Network, derivative engine, loss groups and interface sides of subdomain `id`. A condition
/// is sampled only where the subdomain touches its boundary part ("points" per subdomain); a
/// data condition keeps the observations inside the subdomain. Random streams are keyed by
/// (seed, id, purpose), never by rank; `replica` says which slice of every sample this rank
/// keeps. `parameters`: the shared trainable parameters (null: none).
std::unique_ptr<train::SubdomainModel> build_subdomain(
    const io::Case& c, const Problem& p, const Decomposition& d, int id,
    physics::Replica replica = {},
    std::shared_ptr<const physics::SharedParameters> parameters = nullptr);

/// The trainer's plan from the case's training section.
train::TrainingPlan training_plan(const io::Case& c, const Problem& p);

}  // namespace tessera::app
