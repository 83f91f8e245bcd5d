#pragma once
/// One subdomain's state in a checkpoint archive: its network, its optimizer, where its points
/// were drawn from (points are redrawn from the state they were drawn from, so a continued run
/// is bit-identical to one never stopped) and its divergence-guard counters.
#include <cstddef>
#include <memory>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/divergence_guard.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

/// `optimizer`: null when the stage has none for it. `slot`: the subdomain's slot in `guard`
/// (its counters are saved when the guard has that slot).
std::shared_ptr<torch::serialize::OutputArchive> save_subdomain(
    const SubdomainModel& model, const torch::optim::Optimizer* optimizer,
    const DivergenceGuard& guard, std::size_t slot);

/// Loads what save_subdomain() wrote, but the optimizer (load_subdomain_optimizer()).
void load_subdomain(torch::serialize::InputArchive& archive, SubdomainModel& model,
                    DivergenceGuard& guard, std::size_t slot);

/// Loads only the network's parameters (in the dtype they were saved in): a trained model to
/// evaluate or to start another run from.
void load_network(torch::serialize::InputArchive& archive, SubdomainModel& model);

/// Loads the shared trainable parameters' raw values from a checkpoint's shared archive.
void load_shared_parameters(torch::serialize::InputArchive& archive,
                            const std::vector<torch::Tensor>& raw);

/// Loads the optimizer state the archive holds, if any, into `optimizer`.
void load_subdomain_optimizer(torch::serialize::InputArchive& archive,
                              torch::optim::Optimizer& optimizer);

}  // namespace tessera::train
