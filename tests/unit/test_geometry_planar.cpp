// The 2-D CGAL layer (planar.hpp) and the shapes built on it (PolygonShape, DiskShape).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/disk_shape.hpp"
#include "tessera/geometry/planar.hpp"
#include "tessera/geometry/polygon_shape.hpp"

#include "geometry_test_support.hpp"

using namespace tessera;
using namespace tessera::geometry;
using namespace tessera::geometry::testing;

namespace {

PolygonWithHoles l_shape() { return {{{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}}, {}}; }

// Unit square with a square hole, the hole given counterclockwise (checked_polygon flips it).
PolygonWithHoles square_with_hole() {
  return {{{0, 0}, {1, 0}, {1, 1}, {0, 1}},
          {{{0.25, 0.25}, {0.75, 0.25}, {0.75, 0.75}, {0.25, 0.75}}}};
}

const double star_outer = 1.0, star_inner = 0.4;
PolygonWithHoles star() {
  PolygonWithHoles p;
  for (int k = 0; k < 10; ++k) {
    const double angle = M_PI / 2 + k * M_PI / 5;
    const double r = k % 2 == 0 ? star_outer : star_inner;
    p.outer.push_back({r * std::cos(angle), r * std::sin(angle)});
  }
  return p;
}
const double star_area = 5 * star_outer * star_inner * std::sin(M_PI / 5);

PolygonWithHoles square(double x0, double y0, double x1, double y1) {
  return {{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, {}};
}

struct Named {
  std::string name;
  std::shared_ptr<const Shape> shape;
  double exact_area;
};

std::vector<Named> test_shapes() {
  return {{"L-shape", make_polygon(l_shape(), "l"), 3.0},
          {"square with hole", make_polygon(square_with_hole(), "sq"), 0.75},
          {"star", make_polygon(star(), "star"), star_area},
          {"disk", make_disk({0.5, -0.25}, 0.7, "disk"), M_PI * 0.49}};
}

// A private folder for the files the tests write, removed when the test program ends.
std::filesystem::path temp_dir() {
  struct Folder {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("tessera_test_geometry_planar_" + std::to_string(getpid()));
    Folder() { std::filesystem::create_directories(path); }
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Folder folder;
  return folder.path;
}

std::string write_file(const std::string& name, const std::string& text) {
  const auto path = (temp_dir() / name).string();
  std::ofstream(path) << text;
  return path;
}

double mesh_area(const SimplexMesh& mesh, double* min_area = nullptr, double* max_edge = nullptr) {
  double total = 0.0, smallest = INFINITY, longest = 0.0;
  for (std::int64_t c = 0; c < mesh.cell_count(); ++c) {
    const double* p[3];
    for (int k = 0; k < 3; ++k) p[k] = &mesh.points[2 * mesh.cells[3 * c + k]];
    const double a = 0.5 * ((p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) -
                            (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]));
    total += a;
    smallest = std::min(smallest, a);
    for (int k = 0; k < 3; ++k) {
      longest =
          std::max(longest, std::hypot(p[(k + 1) % 3][0] - p[k][0], p[(k + 1) % 3][1] - p[k][1]));
    }
  }
  if (min_area) *min_area = smallest;
  if (max_edge) *max_edge = longest;
  return total;
}

// Positive for counterclockwise rings.
double signed_area(const Ring& ring) {
  double twice = 0;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const auto& a = ring[i];
    const auto& b = ring[(i + 1) % ring.size()];
    twice += a[0] * b[1] - a[1] * b[0];
  }
  return twice / 2;
}

}  // namespace

TEST_CASE("polygon and disk measures are exact") {
  for (const auto& s : test_shapes()) {
    CAPTURE(s.name);
    CHECK(s.shape->measure() == doctest::Approx(s.exact_area).epsilon(1e-14));
    CHECK(s.shape->dims() == 2);
  }
}

TEST_CASE("interior samples of polygon and disk shapes classify inside for every sampler") {
  core::Rng rng(7, 0, "interior");
  for (const auto& s : test_shapes()) {
    for (const auto kind : all_kinds) {
      CAPTURE(s.name);
      CAPTURE(sampler_name(kind));
      const auto samples = s.shape->sample_interior(2000, 1, kind, rng);
      REQUIRE(samples.sizes() == torch::IntArrayRef{2000, 3});
      CHECK(samples.dtype() == torch::kFloat64);
      CHECK((s.shape->classify(samples.narrow(1, 0, 2)) >= 0).all().item<bool>());
      const auto time = samples.select(1, 2);
      CHECK(time.min().item<double>() >= 0.0);
      CHECK(time.max().item<double>() < 1.0);
    }
  }
}

TEST_CASE("Monte-Carlo area of polygon and disk shapes agrees with measure() within 1%") {
  core::Rng rng(11, 0, "monte-carlo");
  const std::int64_t n = 200000;
  for (const auto& s : test_shapes()) {
    const Box box = s.shape->bounding_box();
    auto points = unit_samples(SamplerKind::uniform, n, 2, rng);
    for (int d = 0; d < 2; ++d) points.select(1, d).mul_(box.extent(d)).add_(box.lo[d]);
    const double fraction =
        (s.shape->classify(points) >= 0).to(torch::kFloat64).mean().item<double>();
    const double estimate = fraction * box.measure();
    const double relative = std::abs(estimate - s.shape->measure()) / s.shape->measure();
    INFO(s.name << ": Monte-Carlo area " << estimate << ", exact " << s.shape->measure()
                << ", relative difference " << relative);
    CHECK(relative < 0.01);
  }
}

TEST_CASE("interior samples are spread by area: the star's inner pentagon gets its share") {
  core::Rng rng(3, 0, "spread");
  const auto shape = make_polygon(star(), "star");
  const auto p = shape->sample_interior(100000, 0, SamplerKind::sobol, rng);
  // The inner pentagon (vertices at the inner radius) has area 5/2 r^2 sin(72 deg).
  const double pentagon = 2.5 * star_inner * star_inner * std::sin(2 * M_PI / 5);
  const auto inner = make_polygon(
      [] {
        PolygonWithHoles q;
        for (int k = 0; k < 5; ++k) {
          const double angle = M_PI / 2 + (2 * k + 1) * M_PI / 5;
          q.outer.push_back({star_inner * std::cos(angle), star_inner * std::sin(angle)});
        }
        return q;
      }(),
      "pentagon");
  const double fraction = (inner->classify(p) > 0).to(torch::kFloat64).mean().item<double>();
  CHECK(fraction == doctest::Approx(pentagon / star_area).epsilon(0.02));
}

TEST_CASE("boundary samples classify as boundary with outward unit normals") {
  core::Rng rng(5, 0, "boundary");
  for (const auto& s : test_shapes()) {
    const auto& parts = s.shape->boundary_parts();
    for (int part = 0; part < static_cast<int>(parts.size()); ++part) {
      for (const auto kind : all_kinds) {
        CAPTURE(s.name);
        CAPTURE(parts[part].label);
        CAPTURE(sampler_name(kind));
        const auto sample = s.shape->sample_part(part, 300, 2, kind, rng);
        REQUIRE(sample.points.sizes() == torch::IntArrayRef{300, 2});
        REQUIRE(sample.normals.sizes() == torch::IntArrayRef{300, 2});
        REQUIRE(sample.extra.sizes() == torch::IntArrayRef{300, 2});
        CHECK((s.shape->classify(sample.points) == 0).all().item<bool>());
        CHECK(((sample.normals.norm(2, 1) - 1).abs() < 1e-14).all().item<bool>());
        // Away from the corners (where a 1e-6 step may leave a reflex or sharp corner's wedge).
        const auto corners = s.shape->polygons(0.01);
        auto keep = torch::ones({300}, torch::kBool);
        for (const auto& poly : corners) {
          auto drop_near = [&](const Ring& ring) {
            for (const auto& v : ring) {
              const auto d = torch::hypot(sample.points.select(1, 0) - v[0],
                                          sample.points.select(1, 1) - v[1]);
              keep = keep.logical_and(d > 1e-3);
            }
          };
          if (dynamic_cast<const DiskShape*>(s.shape.get()) == nullptr) {
            drop_near(poly.outer);
            for (const auto& h : poly.holes) drop_near(h);
          }
        }
        const auto idx = keep.nonzero().squeeze(1);
        CHECK(idx.numel() > 250);
        const auto p = sample.points.index_select(0, idx);
        const auto nrm = sample.normals.index_select(0, idx);
        CHECK((s.shape->classify(p + 1e-6 * nrm) == -1).all().item<bool>());
        CHECK((s.shape->classify(p - 1e-6 * nrm) == 1).all().item<bool>());
      }
    }
  }
}

TEST_CASE("boundary part measures add up to the perimeter") {
  for (const auto& s : test_shapes()) {
    double total = 0;
    for (const auto& part : s.shape->boundary_parts()) total += part.measure;
    double expected = 0;
    if (s.name == "L-shape") expected = 8;
    if (s.name == "square with hole") expected = 6;
    if (s.name == "star") {
      const double side = std::sqrt(star_outer * star_outer + star_inner * star_inner -
                                    2 * star_outer * star_inner * std::cos(M_PI / 5));
      expected = 10 * side;
    }
    if (s.name == "disk") expected = 2 * M_PI * 0.7;
    CAPTURE(s.name);
    CHECK(total == doctest::Approx(expected).epsilon(1e-14));
  }
}

TEST_CASE("polygon edges are boundary parts; axis-aligned edges carry their plane") {
  const auto l = make_polygon(l_shape(), "geometry.polygon");
  const auto& parts = l->boundary_parts();
  REQUIRE(parts.size() == 6);
  const int axes[6] = {1, 0, 1, 0, 1, 0};
  const double values[6] = {0, 2, 1, 1, 2, 0};
  const double lengths[6] = {2, 1, 1, 1, 1, 2};
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(parts[i].label == "edge " + std::to_string(i));
    REQUIRE(parts[i].plane.has_value());
    CHECK(parts[i].plane->axis == axes[i]);
    CHECK(parts[i].plane->value == values[i]);
    CHECK(parts[i].measure == lengths[i]);
  }
  // "x=0" is edge 5.
  CHECK(parts[5].plane->axis == 0);
  CHECK(parts[5].plane->value == 0.0);

  const auto holed = make_polygon(square_with_hole(), "p");
  REQUIRE(holed->boundary_parts().size() == 8);
  CHECK(holed->boundary_parts()[4].label == "hole 0 edge 0");
  // The hole, turned clockwise from (0.25, 0.25): its first edge goes up along x = 0.25.
  REQUIRE(holed->boundary_parts()[4].plane.has_value());
  CHECK(holed->boundary_parts()[4].plane->axis == 0);
  CHECK(holed->boundary_parts()[4].plane->value == 0.25);

  const auto s = make_polygon(star(), "star");
  for (const auto& part : s->boundary_parts()) CHECK_FALSE(part.plane.has_value());

  const auto two =
      PolygonShape(boolean({square(0, 0, 1, 1)}, {square(2, 0, 3, 1)}, BooleanOp::union_), "two");
  REQUIRE(two.boundary_parts().size() == 8);
  CHECK(contains_text(two.boundary_parts()[4].label, "polygon 1 edge 0"));
}

TEST_CASE("classify keeps the device and accepts float32") {
  const auto shape = make_polygon(l_shape(), "l");
  const auto points =
      torch::tensor({{0.5, 0.5}, {1.5, 1.5}, {0.0, 1.0}, {2.0, 0.5}, {-1.0, 0.0}}, torch::kFloat32);
  const auto c = shape->classify(points);
  CHECK(c.dtype() == torch::kInt8);
  CHECK(c.device() == points.device());
  const std::int8_t expected[5] = {1, -1, 0, 0, -1};
  for (int i = 0; i < 5; ++i) CHECK(c[i].item<int>() == expected[i]);
  const auto d = make_disk({0, 0}, 1, "d")->classify(points.to(torch::kFloat64));
  const std::int8_t expected_disk[5] = {1, -1, 0, -1, 0};
  for (int i = 0; i < 5; ++i) CHECK(d[i].item<int>() == expected_disk[i]);
}

TEST_CASE("checked_polygon orients rings and names what is wrong") {
  // A clockwise outer ring comes back counterclockwise, a counterclockwise hole clockwise.
  PolygonWithHoles cw = square_with_hole();
  std::reverse(cw.outer.begin(), cw.outer.end());
  const auto p = checked_polygon(cw, "g");
  CHECK(signed_area(p.outer) > 0);
  CHECK(signed_area(p.holes[0]) < 0);
  CHECK(area({p}) == 0.75);

  const auto bow_tie = error_of([] {
    checked_polygon({{{0, 0}, {1, 1}, {1, 0}, {0, 1}}, {}}, "geometry.polygon");
  });
  CHECK(contains_text(bow_tie, "geometry.polygon.vertices: edges 0 and 2"));
  CHECK(contains_text(bow_tie, "cross at (0.5, 0.5)"));

  auto outside = square_with_hole();
  outside.holes[0] = {{2, 2}, {3, 2}, {3, 3}};
  const auto hole_outside = error_of([&] { checked_polygon(outside, "geometry.polygon"); });
  CHECK(
      contains_text(hole_outside, "geometry.polygon.holes[0]: the hole is not inside the polygon"));

  auto crossing = square_with_hole();
  crossing.holes[0] = {{0.5, 0.5}, {1.5, 0.5}, {1.5, 0.7}};
  CHECK(contains_text(error_of([&] { checked_polygon(crossing, "k"); }),
                      "k.holes[0]: the hole crosses the outer ring"));

  auto overlapping = square_with_hole();
  overlapping.holes.push_back({{0.5, 0.5}, {0.9, 0.5}, {0.9, 0.9}, {0.5, 0.9}});
  const auto overlap = error_of([&] { checked_polygon(overlapping, "geometry.polygon"); });
  CHECK(contains_text(overlap, "geometry.polygon.holes[0] and geometry.polygon.holes[1]"));
  CHECK(contains_text(overlap, "overlap"));

  auto nested = square_with_hole();
  nested.holes.push_back({{0.4, 0.4}, {0.6, 0.4}, {0.6, 0.6}});
  CHECK(contains_text(error_of([&] { checked_polygon(nested, "k"); }),
                      "k.holes[1]: the hole lies inside k.holes[0]"));

  const auto two = error_of([] { checked_polygon({{{0, 0}, {1, 0}}, {}}, "geometry.polygon"); });
  CHECK(
      contains_text(two, "geometry.polygon.vertices: a polygon needs at least 3 vertices, got 2"));

  CHECK(contains_text(error_of([] {
                        checked_polygon({{{0, 0}, {1, 0}, {1, 0}, {0, 1}}, {}}, "k");
                      }),
                      "k.vertices: vertices 1 and 2 are the same point"));
  CHECK(contains_text(error_of([] {
                        checked_polygon({{{0, 0}, {1, 0}, {0, 1}, {0, 0}}, {}}, "k");
                      }),
                      "the last vertex repeats the first"));
  CHECK(contains_text(error_of([] {
                        checked_polygon({{{0, 0}, {1, 0}, {2, 0}}, {}}, "k");
                      }),
                      "k.vertices"));
  CHECK(contains_text(error_of([] {
                        checked_polygon({{{0, 0}, {2, 0}, {1, 0}, {1, 1}}, {}}, "k");
                      }),
                      "overlap"));
  CHECK(contains_text(error_of([] {
                        checked_polygon({{{0, 0}, {1, 0}, {NAN, 1}}, {}}, "k");
                      }),
                      "not finite"));
  CHECK(contains_text(error_of([] {
                        make_polygon({{{0, 0}, {1, 1}, {1, 0}, {0, 1}}, {}}, "geometry.polygon");
                      }),
                      "geometry.polygon.vertices: edges 0 and 2"));
}

TEST_CASE("read_polygon_file merges faces into polygons with holes") {
  SUBCASE("two triangles forming a square") {
    const auto path =
        write_file("square.off", "OFF\n4 2 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n3 0 1 2\n3 0 2 3\n");
    const auto region = read_polygon_file(path);
    REQUIRE(region.size() == 1);
    CHECK(region[0].outer.size() == 4);
    CHECK(region[0].holes.empty());
    CHECK(area(region) == 1.0);
    CHECK(signed_area(region[0].outer) > 0);
  }
  SUBCASE("a square with a square hole made of 8 triangles") {
    std::string off = "OFF\n8 8 0\n0 0 0\n3 0 0\n3 3 0\n0 3 0\n1 1 0\n2 1 0\n2 2 0\n1 2 0\n";
    for (int k = 0; k < 4; ++k) {
      const int o0 = k, o1 = (k + 1) % 4, i0 = 4 + k, i1 = 4 + (k + 1) % 4;
      off += "3 " + std::to_string(o0) + " " + std::to_string(o1) + " " + std::to_string(i1) + "\n";
      off += "3 " + std::to_string(o0) + " " + std::to_string(i1) + " " + std::to_string(i0) + "\n";
    }
    const auto path = write_file("annulus.off", off);
    const auto region = read_polygon_file(path);
    REQUIRE(region.size() == 1);
    CHECK(region[0].outer.size() == 4);
    REQUIRE(region[0].holes.size() == 1);
    CHECK(region[0].holes[0].size() == 4);
    CHECK(area(region) == 8.0);
    CHECK(signed_area(region[0].holes[0]) < 0);
    const auto shape = make_polygon_file(path);
    CHECK(shape->measure() == 8.0);
    CHECK(shape->boundary_parts().size() == 8);
    CHECK(shape->boundary_parts()[4].label == "hole 0 edge 0");
  }
  SUBCASE("an OBJ quad") {
    const auto path = write_file("quad.obj", "v 0 0 0\nv 2 0 0\nv 2 1 0\nv 0 1 0\nf 1 2 3 4\n");
    CHECK(area(read_polygon_file(path)) == 2.0);
  }
  SUBCASE("errors name the file") {
    const auto missing = (temp_dir() / "missing.off").string();
    CHECK(
        contains_text(error_of([&] { read_polygon_file(missing); }), missing + ": file not found"));
    const auto malformed = write_file("bad.off", "OFF\n3 1 0\n0 0 0\n1 zero 0\n0 1 0\n3 0 1 2\n");
    CHECK(contains_text(error_of([&] { read_polygon_file(malformed); }),
                        malformed + ": cannot read the file"));
    const auto lifted = write_file("lifted.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0.5\n3 0 1 2\n");
    const auto z = error_of([&] { read_polygon_file(lifted); });
    CHECK(contains_text(z, lifted + ": vertex 2 has z = 0.5"));
    CHECK(contains_text(z, "plane z = 0"));
    const auto text = write_file("square.txt", "hello\n");
    CHECK(contains_text(error_of([&] { read_polygon_file(text); }), "unknown extension '.txt'"));
    const auto overlapping = write_file(
        "overlap.off",
        "OFF\n6 2 0\n0 0 0\n1 0 0\n0 1 0\n0.2 0.2 0\n1.2 0.2 0\n0.2 1.2 0\n3 0 1 2\n3 3 4 5\n");
    CHECK(contains_text(error_of([&] { read_polygon_file(overlapping); }),
                        overlapping + ": faces overlap near"));
    const auto empty = write_file("empty.off", "OFF\n0 0 0\n");
    CHECK(contains_text(error_of([&] { read_polygon_file(empty); }), empty + ":"));
  }
}

TEST_CASE("boolean operations are exact up to the final rounding") {
  SUBCASE("square minus a disk") {
    const double r = 0.3;
    const auto disk = DiskShape({0.5, 0.5}, r).polygons(1e-3);
    const auto result = boolean({square(0, 0, 1, 1)}, disk, BooleanOp::difference);
    REQUIRE(result.size() == 1);
    CHECK(result[0].holes.size() == 1);
    CHECK(area(result) == doctest::Approx(1 - M_PI * r * r).epsilon(1e-4));
    CHECK(area(result) == doctest::Approx(1 - area(disk)).epsilon(1e-14));
    const auto shape = PolygonShape(result, "difference");
    CHECK(shape.measure() == area(result));
  }
  SUBCASE("union of two overlapping squares") {
    const auto result =
        boolean({square(0, 0, 1, 1)}, {square(0.5, 0.5, 1.5, 1.5)}, BooleanOp::union_);
    REQUIRE(result.size() == 1);
    CHECK(result[0].outer.size() == 8);
    CHECK(result[0].holes.empty());
    CHECK(signed_area(result[0].outer) > 0);
    CHECK(area(result) == 1.75);
  }
  SUBCASE("union of squares sharing an edge drops the collinear vertices") {
    const auto result = boolean({square(0, 0, 1, 1)}, {square(1, 0, 2, 1)}, BooleanOp::union_);
    REQUIRE(result.size() == 1);
    CHECK(result[0].outer.size() == 4);
    CHECK(area(result) == 2.0);
  }
  SUBCASE("intersection") {
    CHECK(area(boolean({square(0, 0, 1, 1)}, {square(0.5, 0.5, 1.5, 1.5)},
                       BooleanOp::intersection)) == 0.25);
    CHECK(boolean({square(0, 0, 1, 1)}, {square(2, 2, 3, 3)}, BooleanOp::intersection).empty());
  }
  SUBCASE("a frame: square minus a smaller square gives a hole, clockwise") {
    const auto result = boolean({square(0, 0, 4, 4)}, {square(1, 1, 3, 3)}, BooleanOp::difference);
    REQUIRE(result.size() == 1);
    REQUIRE(result[0].holes.size() == 1);
    CHECK(signed_area(result[0].holes[0]) < 0);
    CHECK(area(result) == 12.0);
  }
}

TEST_CASE("triangulate covers the region exactly with its own vertices") {
  const PolygonSet regions[] = {
      {checked_polygon(l_shape(), "l")},
      {checked_polygon(square_with_hole(), "s")},
      {checked_polygon(star(), "star")},
      boolean({square(0, 0, 1, 1)}, {square(2, 0, 3, 1)}, BooleanOp::union_)};
  for (const auto& region : regions) {
    const auto mesh = triangulate(region);
    CHECK(mesh.dims == 2);
    double smallest = 0;
    const double total = mesh_area(mesh, &smallest);
    CHECK(smallest > 0);
    CHECK(total == doctest::Approx(area(region)).epsilon(1e-12));
    std::size_t vertices = 0;
    for (const auto& p : region) {
      vertices += p.outer.size();
      for (const auto& h : p.holes) vertices += h.size();
    }
    CHECK(mesh.point_count() == static_cast<std::int64_t>(vertices));
  }
}

TEST_CASE("mesh_region gives positive triangles covering the region, edges within the size") {
  const PolygonSet regions[] = {{checked_polygon(l_shape(), "l")},
                                {checked_polygon(square_with_hole(), "s")},
                                {checked_polygon(star(), "star")},
                                DiskShape({0, 0}, 1).polygons(0.05)};
  for (const double h : {0.2, 0.05}) {
    for (const auto& region : regions) {
      CAPTURE(h);
      const auto mesh = mesh_region(region, h);
      double smallest = 0, longest = 0;
      const double total = mesh_area(mesh, &smallest, &longest);
      CHECK(mesh.cell_count() > 0);
      CHECK(smallest > 0);
      CHECK(total == doctest::Approx(area(region)).epsilon(1e-12));
      CHECK(longest <= h * 1.01);
      // Deterministic: the same input gives the same mesh.
      const auto again = mesh_region(region, h);
      CHECK(again.points == mesh.points);
      CHECK(again.cells == mesh.cells);
    }
  }
  CHECK(contains_text(error_of([] { mesh_region({square(0, 0, 1, 1)}, 0.0); }), "max_cell_size"));
}

TEST_CASE("disk: validation, boundary part, inscribed polygons") {
  CHECK(contains_text(error_of([] {
                        DiskShape({0, 0}, -1, "geometry.disk");
                      }),
                      "geometry.disk.radius: expected a positive number, got -1"));
  CHECK(contains_text(error_of([] {
                        make_disk({0, NAN}, 1, "geometry.disk");
                      }),
                      "geometry.disk.center"));
  const DiskShape disk({1, 2}, 0.5);
  REQUIRE(disk.boundary_parts().size() == 1);
  CHECK(disk.boundary_parts()[0].label == "circle");
  CHECK_FALSE(disk.boundary_parts()[0].plane.has_value());
  CHECK(disk.boundary_parts()[0].measure == doctest::Approx(M_PI));
  const Box box = disk.bounding_box();
  CHECK(box.lo == std::vector<double>{0.5, 1.5});
  CHECK(box.hi == std::vector<double>{1.5, 2.5});
  CHECK(disk.polygons(10.0)[0].outer.size() == 16);
  const auto fine = disk.polygons(0.01);
  CHECK(fine[0].outer.size() == static_cast<std::size_t>(std::ceil(M_PI / 0.01)));
  CHECK(signed_area(fine[0].outer) > 0);
  CHECK(area(fine) == doctest::Approx(disk.measure()).epsilon(1e-4));
  CHECK_NOTHROW(checked_polygon(fine[0], "fine"));
}
