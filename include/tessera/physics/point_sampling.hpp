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
  core::Rng::State origin;  ///< rng state before the current sample was drawn

  /// Call first in every resample(): remembers where the new sample starts.
  void begin_sample() { origin = rng.state(); }
  /// Rewinds the stream to `from` (then resample() redraws that sample).
  void rewind(const core::Rng::State& from) { rng.set_state(from); }

  /// Places later samples in `dtype`; true when that changed it (then redraw the current sample
  /// from `origin`, which places the same points in the new dtype).
  bool set_dtype(torch::Dtype dtype) {
    if (options.dtype == dtype) return false;
    options.dtype = dtype;
    return true;
  }

  /// This replica's rows of float64 CPU samples, moved to the network's dtype and device.
  torch::Tensor place(const torch::Tensor& x) const {
    return options.replica.rows(x).to(options.device, options.dtype);
  }
};

}  // namespace tessera::physics
