#include "tessera/geometry/polygon_shape.hpp"

#include <algorithm>
#include <cmath>

#include "classify_on_cpu.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/planar.hpp"

namespace tessera::geometry {

PolygonShape::PolygonShape(PolygonSet region, std::string key)
    : region_(std::move(region)), key_(std::move(key)) {
  TESSERA_CHECK(!region_.empty(),
                key_ << ": the region is empty; a polygon shape needs at least one polygon");
  box_ = Box{{region_[0].outer[0][0], region_[0].outer[0][1]},
             {region_[0].outer[0][0], region_[0].outer[0][1]}};
  for (const auto& p : region_) {
    for (const auto& v : p.outer) {  // holes lie inside
      for (int d = 0; d < 2; ++d) {
        box_.lo[d] = std::min(box_.lo[d], v[d]);
        box_.hi[d] = std::max(box_.hi[d], v[d]);
      }
    }
  }
  area_ = area(region_);
  TESSERA_CHECK(area_ > 0.0, key_ << ": the region has zero area");

  const bool several = region_.size() > 1;
  auto add_ring = [&](const Ring& ring, const std::string& prefix) {
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const Point2 a = ring[i];
      const Point2 b = ring[(i + 1) % ring.size()];
      BoundaryPart part;
      part.label = prefix + "edge " + std::to_string(i);
      part.measure = std::hypot(b[0] - a[0], b[1] - a[1]);
      if (a[0] == b[0]) part.plane = Plane{0, a[0]};
      if (a[1] == b[1]) part.plane = Plane{1, a[1]};
      parts_.push_back(std::move(part));
      edges_.push_back({a, b});
    }
  };
  for (std::size_t p = 0; p < region_.size(); ++p) {
    const std::string polygon = several ? "polygon " + std::to_string(p) + " " : "";
    add_ring(region_[p].outer, polygon);
    for (std::size_t j = 0; j < region_[p].holes.size(); ++j) {
      add_ring(region_[p].holes[j], polygon + "hole " + std::to_string(j) + " ");
    }
  }

  locator_ = std::make_unique<const PlanarLocator>(region_, boundary_tolerance());

  const SimplexMesh mesh = triangulate(region_);
  TESSERA_CHECK(mesh.cell_count() > 0, key_ << ": the region could not be triangulated");
  auto points = torch::from_blob(const_cast<double*>(mesh.points.data()), {mesh.point_count(), 2},
                                 torch::kFloat64);
  auto cells = torch::from_blob(const_cast<std::int64_t*>(mesh.cells.data()),
                                {mesh.cell_count() * 3}, torch::kInt64);
  auto corners = points.index_select(0, cells).reshape({mesh.cell_count(), 3, 2}).clone();
  triangles_ = std::make_unique<const TriangleSampler>(corners);
}

PolygonShape::~PolygonShape() = default;

torch::Tensor PolygonShape::classify(const torch::Tensor& points) const {
  return classify_on_cpu(points, 2, *locator_, "PolygonShape::classify");
}

torch::Tensor PolygonShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                            core::Rng& rng) const {
  TESSERA_CHECK(extra_dims >= 0, "PolygonShape::sample_interior: extra_dims < 0");
  const auto unit = unit_samples(kind, n, 2 + extra_dims, rng);
  auto points = triangles_->map(unit).first;
  return torch::cat({points, unit.narrow(1, 2, extra_dims)}, 1).contiguous();
}

PartSample PolygonShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                     core::Rng& rng) const {
  TESSERA_CHECK(part >= 0 && part < static_cast<int>(parts_.size()),
                "PolygonShape::sample_part: no part " << part << " (" << key_ << " has "
                                                      << parts_.size() << " edges)");
  TESSERA_CHECK(extra_dims >= 0, "PolygonShape::sample_part: extra_dims < 0");
  const auto unit = unit_samples(kind, n, 1 + extra_dims, rng);
  const auto& [a, b] = edges_[part];
  const double dx = b[0] - a[0], dy = b[1] - a[1];
  const double length = std::hypot(dx, dy);
  const auto u = unit.select(1, 0);
  auto points = torch::stack({u * dx + a[0], u * dy + a[1]}, 1);
  // The domain is on the left of each edge, so the outward normal is the edge turned clockwise.
  auto normals = torch::empty({n, 2}, torch::kFloat64);
  normals.select(1, 0).fill_(dy / length);
  normals.select(1, 1).fill_(-dx / length);
  return {points, normals, unit.narrow(1, 1, extra_dims).contiguous()};
}

std::shared_ptr<const Shape> make_polygon(PolygonWithHoles polygon, const std::string& key) {
  return std::make_shared<const PolygonShape>(PolygonSet{checked_polygon(std::move(polygon), key)},
                                              key);
}

std::shared_ptr<const Shape> make_polygon_file(const std::string& path) {
  return std::make_shared<const PolygonShape>(read_polygon_file(path), path);
}

}  // namespace tessera::geometry
