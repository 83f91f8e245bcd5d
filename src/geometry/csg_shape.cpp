#include "tessera/geometry/csg_shape.hpp"

#include <algorithm>
#include <numeric>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/planar.hpp"
#include "tessera/geometry/rejection.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::geometry {
namespace {

// Resolution of curved children when the exact measure is computed (see measure()).
constexpr double planar_resolution = 1.0 / 256.0;
constexpr double spatial_resolution = 1.0 / 48.0;
// Points per part for the surviving-fraction estimate; a fixed stream keeps it deterministic.
constexpr std::int64_t survival_points = 4096;

Box combined_box(BooleanOp op, const std::vector<CsgShape::Child>& children,
                 const std::string& key) {
  Box box = children.front().shape->bounding_box();
  if (op == BooleanOp::difference) return box;
  for (std::size_t c = 1; c < children.size(); ++c) {
    const Box other = children[c].shape->bounding_box();
    for (int d = 0; d < box.dims(); ++d) {
      if (op == BooleanOp::union_) {
        box.lo[d] = std::min(box.lo[d], other.lo[d]);
        box.hi[d] = std::max(box.hi[d], other.hi[d]);
      } else {
        box.lo[d] = std::max(box.lo[d], other.lo[d]);
        box.hi[d] = std::min(box.hi[d], other.hi[d]);
      }
    }
  }
  for (int d = 0; d < box.dims(); ++d) {
    TESSERA_CHECK(box.lo[d] < box.hi[d],
                  key << ": the intersection is empty (the shapes' bounding "
                         "boxes do not overlap); check the shapes' positions");
  }
  return box;
}

double largest_extent(const Box& box) {
  double extent = 0.0;
  for (int d = 0; d < box.dims(); ++d) extent = std::max(extent, box.extent(d));
  return extent;
}

}  // namespace

std::string boolean_name(BooleanOp op) {
  switch (op) {
    case BooleanOp::union_:
      return "union";
    case BooleanOp::intersection:
      return "intersection";
    case BooleanOp::difference:
      return "difference";
  }
  return "?";
}

CsgShape::CsgShape(BooleanOp op, std::vector<Child> children, std::string key)
    : op_(op), children_(std::move(children)), key_(std::move(key)) {
  TESSERA_CHECK(!children_.empty(), key_ << ": needs at least one shape");
  TESSERA_CHECK(op_ == BooleanOp::union_ || children_.size() >= 2,
                key_ << ": " << boolean_name(op_) << " needs at least two shapes");
  for (std::size_t c = 0; c < children_.size(); ++c) {
    TESSERA_CHECK(children_[c].shape, key_ << "[" << c << "]: no shape");
    TESSERA_CHECK(children_[c].shape->dims() == dims(),
                  key_ << "[" << c << "]: is " << children_[c].shape->dims()
                       << "-D but the first shape is " << dims()
                       << "-D; combine shapes of one dimension");
  }
  box_ = combined_box(op_, children_, key_);
  for (int c = 0; c < static_cast<int>(children_.size()); ++c) {
    const auto& child_parts = children_[c].shape->boundary_parts();
    const double sign = (op_ == BooleanOp::difference && c > 0) ? -1.0 : 1.0;
    for (int q = 0; q < static_cast<int>(child_parts.size()); ++q) {
      PartSource source{c, q, sign};
      BoundaryPart part = child_parts[q];
      if (!children_[c].name.empty()) part.label = children_[c].name + " " + part.label;
      part.measure *= surviving_fraction(source);
      parts_.push_back(part);
      sources_.push_back(source);
    }
  }
  const double total =
      std::accumulate(parts_.begin(), parts_.end(), 0.0,
                      [](double sum, const BoundaryPart& p) { return sum + p.measure; });
  TESSERA_CHECK(total > 0.0, key_ << ": the " << boolean_name(op_)
                                  << " is empty (no boundary is "
                                     "left); check the shapes' positions and sizes");
}

torch::Tensor CsgShape::classify(const torch::Tensor& points) const {
  auto result = children_.front().shape->classify(points);
  for (std::size_t c = 1; c < children_.size(); ++c) {
    const auto other = children_[c].shape->classify(points);
    switch (op_) {
      case BooleanOp::union_:
        result = torch::maximum(result, other);
        break;
      case BooleanOp::intersection:
        result = torch::minimum(result, other);
        break;
      case BooleanOp::difference:
        result = torch::minimum(result, -other);
        break;
    }
  }
  return result;
}

double CsgShape::measure() const {
  std::call_once(measured_, [this] {
    double extent = 0.0;  // of the children, so a small result of large shapes stays cheap
    for (const auto& child : children_)
      extent = std::max(extent, largest_extent(child.shape->bounding_box()));
    if (dims() == 2) {
      measure_ = area(polygons(planar_resolution * extent));
    } else if (dims() == 3) {
      measure_ = volume(surface(spatial_resolution * extent));
    } else {  // 1-D: intervals; exact by sampling is not needed, measure the pieces on a fine grid
      const std::int64_t n = 1 << 20;
      const auto x = torch::linspace(box_.lo[0], box_.hi[0], n, torch::kFloat64).unsqueeze(1);
      measure_ = contains(x).to(torch::kFloat64).mean().item<double>() * box_.extent(0);
    }
  });
  return measure_;
}

PolygonSet CsgShape::polygons(double max_edge) const {
  PolygonSet result = children_.front().shape->polygons(max_edge);
  for (std::size_t c = 1; c < children_.size(); ++c)
    result = boolean(result, children_[c].shape->polygons(max_edge), op_);
  return result;
}

TriangleSurface CsgShape::surface(double max_edge) const {
  TriangleSurface result = children_.front().shape->surface(max_edge);
  for (std::size_t c = 1; c < children_.size(); ++c)
    result = boolean(result, children_[c].shape->surface(max_edge), op_);
  return result;
}

torch::Tensor CsgShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                        core::Rng& rng) const {
  return sample_in_bounding_box(*this, n, extra_dims, kind, rng, key_);
}

double CsgShape::surviving_fraction(const PartSource& source) const {
  const auto& child = *children_[source.child].shape;
  if (child.boundary_parts()[source.part].measure <= 0.0) return 0.0;
  core::Rng rng(0, source.child, "csg-survival:" + std::to_string(source.part));
  const auto sample = child.sample_part(source.part, survival_points, 0, SamplerKind::sobol, rng);
  const auto on_boundary = classify(sample.points) == 0;
  return on_boundary.to(torch::kFloat64).mean().item<double>();
}

PartSample CsgShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                 core::Rng& rng) const {
  TESSERA_CHECK(
      part >= 0 && part < static_cast<int>(parts_.size()),
      "CsgShape::sample_part: no part " << part << " (this shape has " << parts_.size() << ")");
  const auto& source = sources_[part];
  const auto& child = *children_[source.child].shape;
  const int d = dims();
  // Rows [point | normal | extra], so one collector keeps the three together.
  const auto rows = collect_accepted(
      n,
      [&](std::int64_t m) {
        const auto s = child.sample_part(source.part, m, extra_dims, kind, rng);
        const auto all = torch::cat({s.points, s.normals * source.sign, s.extra}, 1);
        return all.index({classify(s.points) == 0});
      },
      key_ + ": boundary part '" + parts_[part].label + "'");
  return {rows.narrow(1, 0, d).contiguous(), rows.narrow(1, d, d).contiguous(),
          rows.narrow(1, 2 * d, extra_dims).contiguous()};
}

std::optional<std::vector<int>> CsgShape::select_parts(const std::string& text) const {
  const std::string prefix = "inside(";
  if (text.rfind(prefix, 0) != 0 || text.back() != ')') return std::nullopt;
  const std::string name = text.substr(prefix.size(), text.size() - prefix.size() - 1);
  std::vector<int> selected;
  bool found = false;
  for (int p = 0; p < static_cast<int>(parts_.size()); ++p) {
    const auto& source = sources_[p];
    const auto& child = children_[source.child];
    bool match = child.name == name;
    if (!match) {
      if (const auto nested = child.shape->select_parts(text)) {
        match = std::find(nested->begin(), nested->end(), source.part) != nested->end();
        found = true;
      }
    }
    found = found || child.name == name;
    if (match && parts_[p].measure > 0.0) selected.push_back(p);
  }
  if (!found) return std::nullopt;
  return selected;
}

}  // namespace tessera::geometry
