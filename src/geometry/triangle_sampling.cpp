#include "tessera/geometry/triangle_sampling.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {
namespace {

// Areas of triangles [m, 3, dims] for dims 2 or 3.
torch::Tensor triangle_areas(const torch::Tensor& corners) {
  const auto a = corners.select(1, 0);
  const auto ab = corners.select(1, 1) - a;
  const auto ac = corners.select(1, 2) - a;
  if (corners.size(2) == 2) {
    return (ab.select(1, 0) * ac.select(1, 1) - ab.select(1, 1) * ac.select(1, 0)).abs() * 0.5;
  }
  return torch::linalg_cross(ab, ac, 1).norm(2, 1) * 0.5;
}

}  // namespace

TriangleSampler::TriangleSampler(torch::Tensor corners) : corners_(std::move(corners)) {
  TESSERA_CHECK(corners_.dim() == 3 && corners_.size(0) >= 1 && corners_.size(1) == 3 &&
                    (corners_.size(2) == 2 || corners_.size(2) == 3),
                "TriangleSampler: expected corners [m >= 1, 3, 2 or 3], got " << corners_.sizes());
  corners_ = corners_.to(torch::kFloat64).contiguous();
  const auto areas = triangle_areas(corners_);
  area_ = areas.sum().item<double>();
  TESSERA_CHECK(area_ > 0.0, "TriangleSampler: the triangles have no area");
  cumulative_ = areas.cumsum(0) / area_;
  cumulative_[-1] = 1.0;  // round-off must not leave the last interval short of 1
}

std::pair<torch::Tensor, torch::Tensor> TriangleSampler::map(const torch::Tensor& unit) const {
  TESSERA_CHECK(unit.dim() == 2 && unit.size(1) >= 2,
                "TriangleSampler::map: expected unit samples [n, >= 2], got " << unit.sizes());
  const auto u0 = unit.select(1, 0).contiguous();
  auto index = torch::searchsorted(cumulative_, u0, /*out_int32=*/false, /*right=*/true)
                   .clamp_max(corners_.size(0) - 1);
  const auto upper = cumulative_.index_select(0, index);
  const auto lower = torch::where(index > 0, cumulative_.index_select(0, (index - 1).clamp_min(0)),
                                  torch::zeros_like(upper));
  // The position of u0 inside its triangle's interval, reused as a fresh unit coordinate.
  const auto width = (upper - lower).clamp_min(1e-300);
  const auto r0 = ((u0 - lower) / width).clamp(0.0, 1.0);
  const auto r1 = unit.select(1, 1);
  const auto tri = corners_.index_select(0, index);  // [n, 3, dims]
  // Square to triangle: s = sqrt(r0) spreads area uniformly.
  const auto s = r0.sqrt().unsqueeze(1);
  const auto t = r1.unsqueeze(1);
  auto points = tri.select(1, 0) * (1.0 - s) + tri.select(1, 1) * (s * (1.0 - t)) +
                tri.select(1, 2) * (s * t);
  return {points, index};
}

}  // namespace tessera::geometry
