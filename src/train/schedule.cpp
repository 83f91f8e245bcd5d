#include <cmath>

#include "tessera/train/plan.hpp"

namespace tessera::train {

double scheduled_lr(const StagePlan& stage, int64_t k) {
  if (!stage.decay_rate) return stage.lr;
  return stage.lr * std::pow(*stage.decay_rate, static_cast<double>(k / stage.decay_every));
}

}  // namespace tessera::train
