#pragma once
/// Builds the network and loss groups of one subdomain from the case and the problem.
#include "tessera/app/problem.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// The network options for subdomain `id` over `box` (its inputs are normalised over it);
/// `subdomains.<id>.network` overrides the case's network.
nn::MlpOptions network_options(const io::Case& c, const Problem& p, int id,
                               const geometry::Box& box);

/// Network, derivative engine and loss groups of subdomain `id` whose region is `region`.
/// Random streams are keyed by (seed, id, purpose), never by rank.
std::unique_ptr<train::SubdomainModel> build_subdomain(
    const io::Case& c, const Problem& p, int id,
    std::shared_ptr<const geometry::Domain> region);

/// The trainer's plan from the case's training section.
train::TrainingPlan training_plan(const io::Case& c, const Problem& p);

}  // namespace tessera::app
