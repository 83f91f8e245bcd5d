// Constructive solid geometry (CsgShape) over every primitive, and Domain selectors on it: CSG
// shapes sample inside themselves, have the right measure and unit outward boundary normals.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/ball_shape.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/csg_shape.hpp"
#include "tessera/geometry/disk_shape.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/geometry/polygon_shape.hpp"
#include "tessera/geometry/surface_shape.hpp"

#include "geometry_test_support.hpp"

using namespace tessera;
using namespace tessera::geometry;
using namespace tessera::geometry::testing;

namespace {

std::shared_ptr<const Shape> csg(BooleanOp op, std::vector<CsgShape::Child> children) {
  return std::make_shared<const CsgShape>(op, std::move(children), "geometry");
}

/// Containment Monte-Carlo measure: the fraction of uniform bounding-box points inside.
double monte_carlo_measure(const Shape& shape, std::int64_t n = 400000) {
  core::Rng rng(7, 0, "mc");
  const Box box = shape.bounding_box();
  auto points = unit_samples(SamplerKind::uniform, n, shape.dims(), rng);
  for (int d = 0; d < shape.dims(); ++d) points.select(1, d).mul_(box.extent(d)).add_(box.lo[d]);
  return shape.contains(points).to(torch::kFloat64).mean().item<double>() * box.measure();
}

/// What every shape must pass: samples inside, MC measure within 1% of the exact one, boundary
/// samples on the boundary with unit outward normals.
void check_shape(const Shape& shape, double exact_measure) {
  const double measure = shape.measure();
  CHECK(measure == doctest::Approx(exact_measure).epsilon(5e-3));
  CHECK(std::abs(monte_carlo_measure(shape) - measure) <= 0.01 * measure);
  core::Rng rng(3, 0, "test");
  for (auto kind : {SamplerKind::uniform, SamplerKind::lhs, SamplerKind::sobol}) {
    const auto inside = shape.sample_interior(2000, 1, kind, rng);
    REQUIRE(inside.size(0) == 2000);
    CHECK(shape.contains(inside.narrow(1, 0, shape.dims())).all().item<bool>());
    CHECK(inside.select(1, shape.dims())
              .ge(0)
              .logical_and(inside.select(1, shape.dims()).lt(1))
              .all()
              .item<bool>());
  }
  const double step = 1e-6;
  for (int part = 0; part < static_cast<int>(shape.boundary_parts().size()); ++part) {
    if (shape.boundary_parts()[part].measure == 0.0) continue;
    CAPTURE(shape.boundary_parts()[part].label);
    const auto s = shape.sample_part(part, 500, 0, SamplerKind::sobol, rng);
    CHECK((shape.classify(s.points) == 0).all().item<bool>());
    CHECK((s.normals.norm(2, 1) - 1).abs().max().item<double>() < 1e-12);
    CHECK((shape.classify(s.points + step * s.normals) < 0).all().item<bool>());
    CHECK((shape.classify(s.points - step * s.normals) > 0).all().item<bool>());
  }
}

}  // namespace

TEST_CASE("union, intersection and difference of boxes: exact areas, samples, outward normals") {
  const auto a = make_box(Box{{0, 0}, {1, 1}});
  const auto b = make_box(Box{{0.5, 0.25}, {1.5, 0.75}});
  check_shape(*csg(BooleanOp::union_, {{a, "box0"}, {b, "box1"}}), 1.25);
  check_shape(*csg(BooleanOp::intersection, {{a, "box0"}, {b, "box1"}}), 0.25);
  check_shape(*csg(BooleanOp::difference, {{a, "box0"}, {b, "box1"}}), 0.75);
}

TEST_CASE("plate with a hole: square minus disk, the rim selected with inside(disk0)") {
  const auto plate = csg(BooleanOp::difference, {{make_box(Box{{-1, -1}, {1, 1}}), "box0"},
                                                 {make_disk({0, 0}, 0.3, "disk"), "disk0"}});
  check_shape(*plate, 4 - M_PI * 0.09);
  const Domain domain(plate, {"x", "y"}, std::nullopt, "t", {{"hole", "inside(disk0)"}});
  const auto rim = domain.parse_selector("hole", "conditions[0].on");
  core::Rng rng(5, 0, "rim");
  const auto s = domain.sample_boundary(rim, 400, SamplerKind::uniform, rng);
  CHECK((s.points.norm(2, 1) - 0.3).abs().max().item<double>() < 1e-9);
  // On the rim the plate's outward normal points into the hole, towards the center.
  CHECK(((s.normals + s.points / 0.3).norm(2, 1)).max().item<double>() < 1e-9);
  CHECK(domain.measure(rim) == doctest::Approx(2 * M_PI * 0.3).epsilon(0.01));
  const auto left = domain.parse_selector("x=-1", "on");
  const auto l = domain.sample_boundary(left, 100, SamplerKind::uniform, rng);
  CHECK((l.points.select(1, 0) + 1).abs().max().item<double>() == 0.0);
  CHECK(error_of([&] {
          domain.parse_selector("inside(disk7)", "conditions[1].on");
        }).find("conditions[1].on: unknown boundary part 'inside(disk7)'") == 0);
}

TEST_CASE("nested CSG: an L-shaped polygon union a disk, minus a smaller polygon") {
  const auto lshape =
      make_polygon({{{0, 0}, {1, 0}, {1, 0.5}, {0.5, 0.5}, {0.5, 1}, {0, 1}}, {}}, "l");
  const auto disk = make_disk({1, 1}, 0.25, "d");
  const auto joined = csg(BooleanOp::union_, {{lshape, "polygon0"}, {disk, "disk0"}});
  // The disk sits in the missing corner's far end: the union has two disjoint pieces.
  check_shape(*joined, 0.75 + M_PI * 0.0625);
  const auto notch = make_polygon({{{0.1, 0.1}, {0.3, 0.1}, {0.2, 0.3}}, {}}, "n");
  const auto cut = csg(BooleanOp::difference, {{joined, "union0"}, {notch, "polygon1"}});
  check_shape(*cut, 0.75 + M_PI * 0.0625 - 0.02);
  // inside(disk0) reaches into the nested union.
  const auto selected = cut->select_parts("inside(disk0)");
  REQUIRE(selected);
  REQUIRE(selected->size() == 1);
  CHECK(cut->boundary_parts()[selected->front()].measure ==
        doctest::Approx(2 * M_PI * 0.25).epsilon(0.01));
}

TEST_CASE("3-D: box minus ball, ball intersect box, surface union box") {
  const auto cube = make_box(Box{{0, 0, 0}, {1, 1, 1}});
  const auto ball = make_ball({0.5, 0.5, 0.5}, 0.3, "b");
  check_shape(*csg(BooleanOp::difference, {{cube, "box0"}, {ball, "ball0"}}),
              1 - 4.0 / 3 * M_PI * 0.027);
  const auto corner = make_ball({1, 1, 1}, 0.5, "c");
  check_shape(*csg(BooleanOp::intersection, {{corner, "ball0"}, {cube, "box0"}}),
              4.0 / 3 * M_PI * 0.125 / 8);
  TriangleSurface tetra{{{2, 0, 0}, {3, 0, 0}, {2, 1, 0}, {2, 0, 1}},
                        {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}}};
  check_shape(*csg(BooleanOp::union_, {{cube, "box0"}, {make_surface(tetra, "t"), "mesh0"}}),
              1 + 1.0 / 6);
}

TEST_CASE("bad CSG: empty results and mixed dimensions are errors that name the key") {
  const auto a = make_box(Box{{0, 0}, {1, 1}});
  const auto far = make_box(Box{{2, 2}, {3, 3}});
  CHECK(
      error_of([&] {
        csg(BooleanOp::intersection, {{a, ""}, {far, ""}});
      }) ==
      "geometry: the intersection is empty (the shapes' bounding boxes do not overlap); check the "
      "shapes' positions");
  const auto inner = make_box(Box{{0.2, 0.2}, {0.4, 0.4}});
  CHECK(error_of([&] {
          csg(BooleanOp::difference, {{inner, ""}, {a, ""}});
        }).find("geometry: the difference is empty") == 0);
  CHECK(error_of([&] {
          csg(BooleanOp::union_, {{a, ""}, {make_box(Box{{0, 0, 0}, {1, 1, 1}}), ""}});
        }).find("geometry[1]: is 3-D but the first shape is 2-D") == 0);
}
