#pragma once
// Private to src/geometry: classifying points with a CGAL-backed locator (PlanarLocator,
// SurfaceLocator), whose const queries are thread-safe, in parallel blocks on the CPU.
#include <ATen/Parallel.h>

#include <cstdint>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {

/// points: floating [n, dims] on any device -> int8 PointClass [n] on the same device.
template <class Locator>
torch::Tensor classify_on_cpu(const torch::Tensor& points, int dims, const Locator& locator,
                              const char* who) {
  TESSERA_CHECK(points.dim() == 2 && points.size(1) == dims,
                who << ": expected points [n, " << dims << "], got " << points.sizes());
  const auto cpu = points.to(torch::kCPU, torch::kFloat64).contiguous();
  const std::int64_t n = cpu.size(0);
  auto result = torch::empty({n}, torch::kInt8);
  const double* in = cpu.data_ptr<double>();
  std::int8_t* out = result.data_ptr<std::int8_t>();
  at::parallel_for(0, n, 1024, [&](std::int64_t begin, std::int64_t end) {
    locator.classify(in + dims * begin, end - begin, out + begin);
  });
  return result.to(points.device());
}

}  // namespace tessera::geometry
