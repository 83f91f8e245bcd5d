#pragma once
/// Rejection sampling in rounds: the way shapes without a direct map from the unit cube
/// (CSG results, triangle surfaces, subdomain pieces of irregular domains) draw points.
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/sampler.hpp"

namespace tessera::geometry {

class Shape;

/// Calls draw(m) with growing m until the accepted rows it returns add up to n, and returns the
/// first n of them in order: deterministic for a given stream. The round sizes follow the
/// acceptance seen so far. Throws, naming `what`, when nothing is accepted after 2^24 draws
/// (the set is empty or of measure zero).
torch::Tensor collect_accepted(std::int64_t n,
                               const std::function<torch::Tensor(std::int64_t)>& draw,
                               const std::string& what);

/// n points uniformly in `shape` by rejection from its bounding box, float64 CPU
/// [n, dims + extra_dims] (extra columns in [0, 1) as in Shape::sample_interior).
torch::Tensor sample_in_bounding_box(const Shape& shape, std::int64_t n, int extra_dims,
                                     SamplerKind kind, core::Rng& rng, const std::string& what);

}  // namespace tessera::geometry
