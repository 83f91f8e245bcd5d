// Optimizer state in checkpoints: every optimizer of the trainer (FusedAdam, QuasiNewton)
// serializes its whole state itself, so a continued run is bit-identical.
#include "tessera/train/optimizer_state.hpp"

#include "tessera/core/torch_pch.hpp"

namespace tessera::train {

void save_optimizer(const torch::optim::Optimizer& optimizer,
                    torch::serialize::OutputArchive& archive) {
  optimizer.save(archive);
}

void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
  optimizer.load(archive);
}

}  // namespace tessera::train
