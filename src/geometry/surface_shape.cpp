#include "tessera/geometry/surface_shape.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "classify_on_cpu.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/rejection.hpp"

namespace tessera::geometry {
namespace {

// A face's outward unit normal; zero for a degenerate face.
Point3 unit_normal(const Point3& a, const Point3& b, const Point3& c) {
  const Point3 ab{b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  const Point3 ac{c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  Point3 n{ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2],
           ab[0] * ac[1] - ab[1] * ac[0]};
  const double length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (length == 0.0) return {0.0, 0.0, 0.0};
  return {n[0] / length, n[1] / length, n[2] / length};
}

// (axis, side) when the face lies in an axis-aligned plane facing -e_axis (side -1) or +e_axis.
std::optional<std::pair<int, int>> planar_axis(const Point3& normal, const Point3& a,
                                               const Point3& b, const Point3& c) {
  constexpr double tolerance = 1e-9;
  for (int axis = 0; axis < 3; ++axis) {
    const int side = normal[axis] < 0.0 ? -1 : 1;
    bool aligned = std::abs(normal[axis] - side) <= tolerance;
    for (int d = 0; d < 3 && aligned; ++d) {
      if (d != axis) aligned = std::abs(normal[d]) <= tolerance;
    }
    if (aligned && a[axis] == b[axis] && a[axis] == c[axis]) return std::make_pair(axis, side);
  }
  return std::nullopt;
}

}  // namespace

SurfaceShape::SurfaceShape(TriangleSurface checked, std::string key)
    : surface_(std::move(checked)), key_(std::move(key)) {
  TESSERA_CHECK(
      !surface_.triangles.empty() && !surface_.vertices.empty(),
      key_ << ": the surface has no faces; a mesh geometry must be a closed triangle surface");
  box_.lo.assign(3, INFINITY);
  box_.hi.assign(3, -INFINITY);
  for (const auto& p : surface_.vertices) {
    for (int d = 0; d < 3; ++d) {
      box_.lo[d] = std::min(box_.lo[d], p[d]);
      box_.hi[d] = std::max(box_.hi[d], p[d]);
    }
  }
  validate_box(box_, key_);
  volume_ = volume(surface_);
  TESSERA_CHECK(volume_ > 0.0, key_ << ": the surface encloses no volume (volume " << volume_
                                    << "); is it oriented outward?");
  locator_ = std::make_unique<SurfaceLocator>(surface_, boundary_tolerance());

  // Faces grouped into parts: (axis, value, side) for planar faces, everything else in "surface".
  std::map<std::tuple<int, double, int>, std::vector<std::int64_t>> planar;
  std::vector<std::int64_t> curved;
  std::vector<Point3> normals(surface_.triangles.size());
  for (std::size_t f = 0; f < surface_.triangles.size(); ++f) {
    const auto& t = surface_.triangles[f];
    const auto& a = surface_.vertices.at(t[0]);
    const auto& b = surface_.vertices.at(t[1]);
    const auto& c = surface_.vertices.at(t[2]);
    normals[f] = unit_normal(a, b, c);
    if (normals[f] == Point3{0.0, 0.0, 0.0}) continue;  // degenerate: no area, no samples
    if (const auto plane = planar_axis(normals[f], a, b, c)) {
      planar[{plane->first, a[plane->first], plane->second}].push_back(
          static_cast<std::int64_t>(f));
    } else {
      curved.push_back(static_cast<std::int64_t>(f));
    }
  }
  const auto add_part = [&](const std::vector<std::int64_t>& faces, BoundaryPart part) {
    const auto m = static_cast<std::int64_t>(faces.size());
    auto corners = torch::empty({m, 3, 3}, torch::kFloat64);
    auto part_normals = torch::empty({m, 3}, torch::kFloat64);
    auto c = corners.accessor<double, 3>();
    auto n = part_normals.accessor<double, 2>();
    for (std::int64_t i = 0; i < m; ++i) {
      const auto& t = surface_.triangles[faces[i]];
      for (int k = 0; k < 3; ++k) {
        for (int d = 0; d < 3; ++d) c[i][k][d] = surface_.vertices[t[k]][d];
      }
      for (int d = 0; d < 3; ++d) n[i][d] = normals[faces[i]][d];
    }
    PartFaces part_faces{TriangleSampler(corners), part_normals};
    part.measure = part_faces.sampler.area();
    parts_.push_back(std::move(part));
    part_faces_.push_back(std::move(part_faces));
  };
  const char* axis_names[] = {"x", "y", "z"};
  for (const auto& [group, faces] : planar) {
    const auto& [axis, value, side] = group;
    std::ostringstream label;
    label << "plane " << axis_names[axis] << "=" << value;
    // Both sides of one plane (a thin wall): the label says which side.
    if (planar.count({axis, value, -side}))
      label << " (facing " << (side < 0 ? "-" : "+") << axis_names[axis] << ")";
    BoundaryPart part;
    part.label = label.str();
    part.plane = Plane{axis, value};
    add_part(faces, std::move(part));
  }
  if (!curved.empty()) {
    BoundaryPart part;
    part.label = "surface";
    add_part(curved, std::move(part));
  }
}

SurfaceShape::~SurfaceShape() = default;

torch::Tensor SurfaceShape::classify(const torch::Tensor& points) const {
  return classify_on_cpu(points, 3, *locator_, "SurfaceShape::classify");
}

torch::Tensor SurfaceShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                            core::Rng& rng) const {
  TESSERA_CHECK(n >= 0, "SurfaceShape::sample_interior: n < 0");
  return sample_in_bounding_box(*this, n, extra_dims, kind, rng, key_);
}

PartSample SurfaceShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                     core::Rng& rng) const {
  TESSERA_CHECK(part >= 0 && part < static_cast<int>(parts_.size()),
                "SurfaceShape::sample_part: no part " << part << " (" << key_ << " has "
                                                      << parts_.size() << ")");
  TESSERA_CHECK(extra_dims >= 0, "SurfaceShape::sample_part: extra_dims < 0");
  const auto& faces = part_faces_[part];
  const auto unit = unit_samples(kind, n, 2 + extra_dims, rng);
  auto [points, index] = faces.sampler.map(unit);
  auto normals = faces.normals.index_select(0, index);
  auto extra = unit.narrow(1, 2, extra_dims).contiguous();
  return {points.contiguous(), normals, extra};
}

std::shared_ptr<const Shape> make_surface_file(const std::string& path) {
  return std::make_shared<const SurfaceShape>(read_surface_file(path), path);
}

std::shared_ptr<const Shape> make_surface(TriangleSurface surface, const std::string& key) {
  return std::make_shared<const SurfaceShape>(checked_surface(std::move(surface), key), key);
}

}  // namespace tessera::geometry
