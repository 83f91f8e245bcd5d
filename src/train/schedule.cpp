#include <cmath>

#include "tessera/train/plan.hpp"

namespace tessera::train {

double scheduled_lr(const StagePlan& stage, int64_t k) {
  double lr = stage.lr;
  if (stage.decay_rate)
    lr *= std::pow(*stage.decay_rate, static_cast<double>(k / stage.decay_every));
  // A fresh Adam's first moments are noise; a linear ramp keeps its first steps small.
  if (k < stage.warmup) lr *= static_cast<double>(k + 1) / static_cast<double>(stage.warmup);
  return lr;
}

}  // namespace tessera::train
