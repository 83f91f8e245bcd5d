#pragma once
/// Where a loss group draws its points: a region, how many, with which sampler, from its own
/// random stream (keyed by seed, subdomain and purpose), moved to the network's dtype/device.
#include <memory>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::physics {

struct PointSampling {
  std::shared_ptr<const geometry::Domain> region;
  int64_t points = 0;
  geometry::SamplerKind sampler = geometry::SamplerKind::sobol;
  core::Rng rng;
  PointOptions options;

  /// Moves float64 CPU samples to the network's dtype and device.
  torch::Tensor place(const torch::Tensor& x) const { return x.to(options.device, options.dtype); }
};

}  // namespace tessera::physics
