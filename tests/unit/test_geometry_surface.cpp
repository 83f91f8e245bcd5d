// The 3-D CGAL layer (surface.hpp) and the 3-D shapes SurfaceShape and BallShape.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/ball_shape.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/surface.hpp"
#include "tessera/geometry/surface_shape.hpp"

#include "geometry_test_support.hpp"

using namespace tessera;
using namespace tessera::geometry;
using namespace tessera::geometry::testing;

namespace {

// A file under the temporary directory, named per process so concurrent runs do not collide.
std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tessera_surface_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// The unit cube [0, 1]^3 as OFF with quads; `faces` of the 6 are written (5: an open box).
std::string cube_off(int faces = 6) {
  std::ostringstream off;
  off << "OFF\n8 " << faces << " 0\n";
  for (int corner = 0; corner < 8; ++corner) {
    off << (corner & 1) << " " << ((corner >> 1) & 1) << " " << ((corner >> 2) & 1) << "\n";
  }
  const char* quads[6] = {"4 0 4 6 2", "4 1 3 7 5", "4 0 1 5 4",
                          "4 2 6 7 3", "4 0 2 3 1", "4 4 5 7 6"};
  for (int f = 0; f < faces; ++f) off << quads[f] << "\n";
  return off.str();
}

// |x| + |y| + |z| <= 1: volume 4/3, area 4 sqrt(3).
std::string octahedron_obj() {
  return "# octahedron\n"
         "v 1 0 0\nv -1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nv 0 0 -1\n"
         "f 1 3 5\nf 3 2 5\nf 2 4 5\nf 4 1 5\nf 3 1 6\nf 2 3 6\nf 4 2 6\nf 1 4 6\n";
}

std::string ascii_stl(const TriangleSurface& s) {
  std::ostringstream stl;
  stl.precision(17);
  stl << "solid sphere\n";
  for (const auto& t : s.triangles) {
    stl << "facet normal 0 0 0\nouter loop\n";
    for (const auto i : t) {
      const auto& p = s.vertices[i];
      stl << "vertex " << p[0] << " " << p[1] << " " << p[2] << "\n";
    }
    stl << "endloop\nendfacet\n";
  }
  stl << "endsolid sphere\n";
  return stl.str();
}

torch::Tensor spatial(const torch::Tensor& rows) { return rows.narrow(1, 0, 3); }

// Monte-Carlo volume: the fraction of uniform bounding-box points classified >= 0.
double monte_carlo_measure(const Shape& shape, std::int64_t n) {
  core::Rng rng(17, 0, "monte-carlo");
  const Box box = shape.bounding_box();
  auto p = unit_samples(SamplerKind::uniform, n, 3, rng);
  for (int d = 0; d < 3; ++d) p.select(1, d).mul_(box.extent(d)).add_(box.lo[d]);
  const double fraction = (shape.classify(p) >= 0).sum().item<double>() / static_cast<double>(n);
  return fraction * box.measure();
}

// The properties every 3-D shape promises for its samples and measure.
void check_shape_samples(const Shape& shape, const std::string& name) {
  CAPTURE(name);
  for (auto kind : all_kinds) {
    CAPTURE(sampler_name(kind));
    core::Rng rng(5, 0, "interior");
    const auto rows = shape.sample_interior(2000, 1, kind, rng);
    REQUIRE(rows.sizes() == torch::IntArrayRef({2000, 4}));
    CHECK((shape.classify(spatial(rows)) >= 0).all().item<bool>());
    CHECK(rows.select(1, 3).min().item<double>() >= 0.0);
    CHECK(rows.select(1, 3).max().item<double>() < 1.0);
    // Deterministic given the rng state.
    core::Rng again(5, 0, "interior");
    CHECK(torch::equal(rows, shape.sample_interior(2000, 1, kind, again)));

    for (int part = 0; part < static_cast<int>(shape.boundary_parts().size()); ++part) {
      CAPTURE(part);
      core::Rng boundary_rng(9, 0, "boundary");
      const auto s = shape.sample_part(part, 1000, 2, kind, boundary_rng);
      REQUIRE(s.points.sizes() == torch::IntArrayRef({1000, 3}));
      REQUIRE(s.normals.sizes() == torch::IntArrayRef({1000, 3}));
      REQUIRE(s.extra.sizes() == torch::IntArrayRef({1000, 2}));
      CHECK((shape.classify(s.points) == 0).all().item<bool>());
      CHECK(((s.normals.norm(2, 1) - 1.0).abs().max().item<double>() < 1e-12));
      CHECK((shape.classify(s.points + 1e-6 * s.normals) == -1).all().item<bool>());
      CHECK((shape.classify(s.points - 1e-6 * s.normals) == 1).all().item<bool>());
    }
  }
  const double mc = monte_carlo_measure(shape, 200000);
  const double difference = std::abs(mc - shape.measure()) / shape.measure();
  MESSAGE(name << ": measure " << shape.measure() << ", Monte-Carlo " << mc
               << ", relative difference " << difference);
  CHECK(difference < 0.01);
}

double tetra_volume(const SimplexMesh& mesh, std::int64_t cell) {
  const auto* c = &mesh.cells[4 * cell];
  const auto* a = &mesh.points[3 * c[0]];
  double e[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int d = 0; d < 3; ++d) e[i][d] = mesh.points[3 * c[i + 1] + d] - a[d];
  }
  return (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
          e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
          e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
         6.0;
}

TriangleSurface cube(double lo, double hi) {
  return BoxShape(Box{{lo, lo, lo}, {hi, hi, hi}}).surface(1.0);
}

}  // namespace

TEST_CASE("a unit cube read from OFF quads: volume, six planar parts of area 1, samples") {
  const auto path = write_temp("cube.off", cube_off());
  const auto shape = make_surface_file(path);
  CHECK(shape->dims() == 3);
  CHECK(std::abs(shape->measure() - 1.0) < 1e-14);
  const Box box = shape->bounding_box();
  CHECK(box.lo == std::vector<double>{0, 0, 0});
  CHECK(box.hi == std::vector<double>{1, 1, 1});
  const auto& parts = shape->boundary_parts();
  REQUIRE(parts.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    REQUIRE(parts[i].plane.has_value());
    CHECK(parts[i].plane->axis == i / 2);
    CHECK(parts[i].plane->value == static_cast<double>(i % 2));
    CHECK(std::abs(parts[i].measure - 1.0) < 1e-14);
  }
  CHECK(parts[0].label == "plane x=0");
  CHECK(parts[5].label == "plane z=1");
  // The part's points lie in its plane and its normal is the axis direction.
  core::Rng rng(1, 0, "faces");
  const auto s = shape->sample_part(3, 100, 0, SamplerKind::sobol, rng);
  CHECK((s.points.select(1, 1) - 1.0).abs().max().item<double>() < 1e-15);
  CHECK(torch::equal(s.normals, torch::tensor({0.0, 1.0, 0.0}, torch::kFloat64).expand({100, 3})));
  check_shape_samples(*shape, "cube.off");
  std::filesystem::remove(path);
}

TEST_CASE("an octahedron read from OBJ: volume 4/3, one curved part of area 4 sqrt(3), samples") {
  const auto path = write_temp("octahedron.obj", octahedron_obj());
  const auto shape = make_surface_file(path);
  CHECK(std::abs(shape->measure() - 4.0 / 3.0) < 1e-14);
  REQUIRE(shape->boundary_parts().size() == 1);
  CHECK(shape->boundary_parts()[0].label == "surface");
  CHECK(!shape->boundary_parts()[0].plane.has_value());
  CHECK(std::abs(shape->boundary_parts()[0].measure - 4.0 * std::sqrt(3.0)) < 1e-13);
  // Exact classification of known points.
  const auto c = shape->classify(
      torch::tensor({0.0, 0.0, 0.0, 0.4, 0.3, 0.2, 0.5, 0.3, 0.2, 0.5, 0.3, 0.21, 1.0, 0.0, 0.0},
                    torch::kFloat64)
          .reshape({5, 3}));
  CHECK(torch::equal(c, torch::tensor({1, 1, 0, -1, 0}, torch::kInt8)));
  check_shape_samples(*shape, "octahedron.obj");
  std::filesystem::remove(path);
}

TEST_CASE("an icosphere written as ASCII STL reads back closed, with its volume and samples") {
  const Point3 center{0.1, -0.2, 0.3};
  const double r = 0.5;
  const auto sphere = sphere_surface(center, r, r / 4);
  const auto path = write_temp("sphere.stl", ascii_stl(sphere));
  const auto shape = make_surface_file(path);
  CHECK(std::abs(shape->measure() - volume(sphere)) < 1e-6);  // STL stores float32
  REQUIRE(shape->boundary_parts().size() == 1);
  CHECK(shape->boundary_parts()[0].label == "surface");
  check_shape_samples(*shape, "sphere.stl");
  std::filesystem::remove(path);
}

TEST_CASE("a ball: measure, classification, exact samples, one part 'sphere', errors") {
  const BallShape ball({1.0, 2.0, -1.0}, 0.75, "geometry.ball");
  CHECK(ball.measure() == doctest::Approx(4.0 / 3.0 * M_PI * 0.421875).epsilon(1e-14));
  REQUIRE(ball.boundary_parts().size() == 1);
  CHECK(ball.boundary_parts()[0].label == "sphere");
  CHECK(!ball.boundary_parts()[0].plane.has_value());
  CHECK(ball.boundary_parts()[0].measure == doctest::Approx(4.0 * M_PI * 0.5625).epsilon(1e-14));
  const auto c = ball.classify(
      torch::tensor({1.0, 2.0, -1.0, 1.75, 2.0, -1.0, 1.0, 2.76, -1.0}, torch::kFloat64)
          .reshape({3, 3}));
  CHECK(torch::equal(c, torch::tensor({1, 0, -1}, torch::kInt8)));
  // Interior samples are uniform: the radius fraction below R/2 is 1/8 of the points.
  core::Rng rng(2, 0, "radial");
  const auto rows = ball.sample_interior(80000, 0, SamplerKind::sobol, rng);
  const auto radius = (rows - torch::tensor({1.0, 2.0, -1.0}, torch::kFloat64)).norm(2, 1);
  CHECK((radius < 0.375).to(torch::kDouble).mean().item<double>() ==
        doctest::Approx(0.125).epsilon(0.02));
  check_shape_samples(ball, "ball");
  CHECK(error_of([] {
          BallShape({0, 0, 0}, 0.0, "geometry.ball");
        }) == "geometry.ball.radius: expected a positive number, got 0");
  CHECK(contains_text(error_of([] {
                        make_ball({0, NAN, 0}, 1.0, "geometry.ball");
                      }),
                      "geometry.ball.center: expected 3 finite numbers"));
  // Its surface is the inscribed icosphere.
  const auto s = ball.surface(0.1);
  CHECK(volume(s) < ball.measure());
  CHECK(volume(s) > 0.98 * ball.measure());
}

TEST_CASE("sphere_surface: edges at most max_edge, closed and outward, volume within 1%") {
  const double r = 2.0;
  const auto s = sphere_surface({1, 1, 1}, r, r / 8);
  double longest = 0.0;
  for (const auto& t : s.triangles) {
    for (int e = 0; e < 3; ++e) {
      const auto& p = s.vertices[t[e]];
      const auto& q = s.vertices[t[(e + 1) % 3]];
      longest = std::max(longest, std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]));
    }
  }
  CHECK(longest <= r / 8);
  const double exact = 4.0 / 3.0 * M_PI * r * r * r;
  const double v = volume(s);
  MESSAGE("icosphere with " << s.triangles.size() << " triangles: volume " << v << " vs " << exact);
  CHECK(v < exact);
  CHECK((exact - v) / exact < 0.01);
  // checked_surface keeps it (closed, outward) and its volume.
  CHECK(volume(checked_surface(s, "sphere")) == doctest::Approx(v).epsilon(1e-14));
}

TEST_CASE(
    "surface files: clear errors for missing, unknown, malformed, open and self-intersecting") {
  const auto missing = error_of([] { read_surface_file("/nonexistent/dir/part.off"); });
  CHECK(contains_text(missing, "/nonexistent/dir/part.off: no such file"));

  const auto ply = write_temp("cube.ply", "ply\n");
  const auto unknown = error_of([&] { read_surface_file(ply); });
  CHECK(contains_text(unknown, ply + ": unknown surface file format '.ply'"));
  CHECK(contains_text(unknown, ".off, .obj or .stl"));

  const auto bad = write_temp("bad.off", "OFF\n8 6 0\n0 0 0\n1 0\n");
  CHECK(contains_text(error_of([&] { read_surface_file(bad); }),
                      bad + ": the file could not be read as OFF"));

  const auto empty = write_temp("empty.off", "OFF\n0 0 0\n");
  CHECK(contains_text(error_of([&] { read_surface_file(empty); }), "has no faces"));

  const auto open = write_temp("open.off", cube_off(5));
  const auto open_error = error_of([&] { read_surface_file(open); });
  CHECK(contains_text(open_error, open + ": the surface is not closed: 4 border edges"));

  // Two overlapping unit cubes as one soup: closed and manifold, but the faces cross.
  std::ostringstream two;
  two << "OFF\n16 12 0\n";
  for (double shift : {0.0, 0.5}) {
    for (int corner = 0; corner < 8; ++corner) {
      two << (corner & 1) + shift << " " << ((corner >> 1) & 1) + shift << " "
          << ((corner >> 2) & 1) + shift << "\n";
    }
  }
  const int quads[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4},
                           {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
  for (int offset : {0, 8}) {
    for (const auto& q : quads) {
      two << "4 " << q[0] + offset << " " << q[1] + offset << " " << q[2] + offset << " "
          << q[3] + offset << "\n";
    }
  }
  const auto overlapping = write_temp("overlapping.off", two.str());
  const auto self_error = error_of([&] { read_surface_file(overlapping); });
  CHECK(contains_text(self_error, overlapping + ": the surface self-intersects"));

  // An edge shared by three faces.
  TriangleSurface fin = cube(0, 1);
  fin.vertices.push_back({0.5, 0.5, 2.0});
  fin.triangles.push_back({0, 1, 8});
  CHECK(contains_text(error_of([&] { checked_surface(fin, "geometry.mesh"); }),
                      "geometry.mesh: the surface is not a manifold"));
  // A cube given inside out comes back outward.
  TriangleSurface inverted = cube(0, 1);
  for (auto& t : inverted.triangles) std::swap(t[1], t[2]);
  CHECK(volume(inverted) == doctest::Approx(-1.0));
  CHECK(volume(checked_surface(inverted, "k")) == doctest::Approx(1.0));

  for (const auto& path : {ply, bad, empty, open, overlapping}) std::filesystem::remove(path);
}

TEST_CASE("boolean operations of closed surfaces by corefinement") {
  const auto unit = cube(0, 1);
  // A cavity: the difference has two shells, the inner one facing inward.
  const auto hollow = boolean(unit, cube(0.25, 0.75), BooleanOp::difference);
  CHECK(std::abs(volume(hollow) - 0.875) < 1e-12);
  const auto cavity = make_surface(hollow, "hollow");
  CHECK(std::abs(cavity->measure() - 0.875) < 1e-12);
  const auto c = cavity->classify(
      torch::tensor({0.5, 0.5, 0.5, 0.1, 0.5, 0.5, 0.25, 0.5, 0.5}).reshape({3, 3}));
  CHECK(torch::equal(c, torch::tensor({-1, 1, 0}, torch::kInt8)));
  // A corner cut off.
  const auto notched = boolean(unit, cube(0.5, 1.5), BooleanOp::difference);
  CHECK(std::abs(volume(notched) - 0.875) < 1e-12);
  CHECK(std::abs(volume(checked_surface(notched, "notched")) - 0.875) < 1e-12);
  // Union with a shifted cube: [0, 1.5] x [0, 1] x [0, 1].
  auto shifted = unit;
  for (auto& p : shifted.vertices) p[0] += 0.5;
  const auto joined = boolean(unit, shifted, BooleanOp::union_);
  CHECK(std::abs(volume(joined) - 1.5) < 1e-12);
  const auto shape = make_surface(joined, "union");
  CHECK(std::abs(shape->measure() - 1.5) < 1e-12);
  CHECK(std::abs(volume(boolean(unit, shifted, BooleanOp::intersection)) - 0.5) < 1e-12);
  // The planar parts of the union: x=0 and x=1.5 of area 1, the other four faces of area 1.5.
  const auto& parts = shape->boundary_parts();
  REQUIRE(parts.size() == 6);
  CHECK(parts[1].plane->value == 1.5);
  CHECK(std::abs(parts[1].measure - 1.0) < 1e-12);
  CHECK(std::abs(parts[2].measure - 1.5) < 1e-12);
  // Disjoint shapes: an empty intersection, a union of two pieces.
  const auto far = cube(2, 3);
  CHECK(boolean(unit, far, BooleanOp::intersection).triangles.empty());
  CHECK(std::abs(volume(boolean(unit, far, BooleanOp::union_)) - 2.0) < 1e-12);
  CHECK(std::abs(volume(boolean(unit, far, BooleanOp::difference)) - 1.0) < 1e-12);
}

TEST_CASE("mesh_volume of the unit cube: positive tetrahedra that fill it exactly") {
  const auto start = std::chrono::steady_clock::now();
  const auto mesh = mesh_volume(cube(0, 1), 0.25);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("Mesh_3: " << mesh.cell_count() << " tetrahedra, " << mesh.point_count() << " points in "
                     << seconds << " s");
  REQUIRE(mesh.dims == 3);
  REQUIRE(mesh.cell_count() > 0);
  double total = 0.0, smallest = INFINITY;
  for (std::int64_t c = 0; c < mesh.cell_count(); ++c) {
    const double v = tetra_volume(mesh, c);
    smallest = std::min(smallest, v);
    total += v;
  }
  CHECK(smallest > 0.0);
  CHECK(std::abs(total - 1.0) < 1e-9);
  for (double x : mesh.points) {
    CHECK(x >= -1e-12);
    CHECK(x <= 1.0 + 1e-12);
  }
  // Every point is used (compact numbering) and the result is deterministic.
  std::vector<bool> used(mesh.point_count(), false);
  for (auto i : mesh.cells) used.at(i) = true;
  CHECK(std::count(used.begin(), used.end(), false) == 0);
  const auto again = mesh_volume(cube(0, 1), 0.25);
  CHECK(again.points == mesh.points);
  CHECK(again.cells == mesh.cells);
}

TEST_CASE("mesh_volume of a smooth surface (no sharp edges) approximates its volume") {
  const auto sphere = sphere_surface({0, 0, 0}, 1.0, 0.1);
  const auto mesh = mesh_volume(sphere, 0.2);
  double total = 0.0, smallest = INFINITY;
  for (std::int64_t c = 0; c < mesh.cell_count(); ++c) {
    smallest = std::min(smallest, tetra_volume(mesh, c));
    total += tetra_volume(mesh, c);
  }
  MESSAGE("Mesh_3 of a sphere: " << mesh.cell_count() << " tetrahedra, volume " << total << " vs "
                                 << volume(sphere));
  CHECK(smallest > 0.0);
  // Facets may sit facet_distance = 0.02 inside the unit sphere: up to ~6% of the volume.
  CHECK(std::abs(total - volume(sphere)) / volume(sphere) < 0.06);
  CHECK_THROWS_AS(mesh_volume(sphere, 0.0), Error);
}
