#pragma once
/// Saving and restoring an optimizer's state (Adam's moments, L-BFGS's history) exactly, for
/// checkpoints and the divergence guard.
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

namespace tessera::train {

void save_optimizer(const torch::optim::Optimizer& optimizer, torch::serialize::OutputArchive& archive);
/// Into an optimizer built over the same parameters as the saved one.
void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

}  // namespace tessera::train
