#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/partition/partition.hpp"

using namespace tessera;
using namespace tessera::partition;

namespace {

geometry::Box unit_box(int dims) {
  return geometry::Box{std::vector<double>(dims, 0.0), std::vector<double>(dims, 1.0)};
}

PartitionSpec split(std::map<std::string, int> pieces) {
  PartitionSpec spec;
  spec.split = std::move(pieces);
  return spec;
}

/// Every point of a fine grid over `box` lies in exactly one subdomain's closed box when it is
/// strictly inside the cells, and the measures add up: the boxes tile the domain.
void check_tiles(const Partition& p, const geometry::Box& box) {
  double total = 0;
  for (const auto& s : p.subdomains()) {
    REQUIRE(s.box.dims() == box.dims());
    for (int a = 0; a < box.dims(); ++a) {
      CHECK(s.box.lo[a] >= box.lo[a]);
      CHECK(s.box.hi[a] <= box.hi[a]);
      CHECK(s.box.lo[a] < s.box.hi[a]);
    }
    total += s.box.measure();
  }
  CHECK(total == doctest::Approx(box.measure()).epsilon(1e-12));
  // No overlap: random interior points are inside exactly one box (open interiors).
  auto x = torch::rand({2000, box.dims()}, torch::kFloat64);
  for (int a = 0; a < box.dims(); ++a) x.select(1, a).mul_(box.hi[a] - box.lo[a]).add_(box.lo[a]);
  const auto ids = p.subdomain_of(x);
  for (int64_t i = 0; i < x.size(0); ++i) {
    int inside = 0, which = -1;
    for (const auto& s : p.subdomains()) {
      bool in = true;
      for (int a = 0; a < box.dims(); ++a) {
        const double v = x[i][a].item<double>();
        in = in && v > s.box.lo[a] && v < s.box.hi[a];
      }
      if (in) ++inside, which = s.id;
    }
    REQUIRE(inside == 1);
    CHECK(ids[i].item<int64_t>() == which);
  }
}

/// Interfaces join face neighbours only: cells differ by exactly one along exactly one axis.
void check_interfaces(const Partition& p) {
  std::set<std::pair<int, int>> seen;
  for (std::size_t k = 0; k < p.interfaces().size(); ++k) {
    const auto& f = p.interfaces()[k];
    CAPTURE(f.id);
    CHECK(f.id == static_cast<int>(k));
    CHECK(f.lower < f.upper);
    CHECK(seen.insert({f.lower, f.upper}).second);
    const auto& lo = p.subdomains()[f.lower];
    const auto& up = p.subdomains()[f.upper];
    for (int a = 0; a < lo.box.dims(); ++a) CHECK(up.cell[a] - lo.cell[a] == (a == f.axis ? 1 : 0));
    // The facet lies on the cut, flat along the axis, and is the shared face of both boxes.
    CHECK(f.position == lo.box.hi[f.axis]);
    CHECK(f.position == up.box.lo[f.axis]);
    CHECK(f.facet.lo[f.axis] == f.position);
    CHECK(f.facet.hi[f.axis] == f.position);
    const auto& cuts = p.cuts()[f.axis];
    CHECK(std::find(cuts.begin(), cuts.end(), f.position) != cuts.end());
    for (int a = 0; a < lo.box.dims(); ++a) {
      if (a == f.axis) continue;
      CHECK(f.facet.lo[a] == lo.box.lo[a]);
      CHECK(f.facet.hi[a] == lo.box.hi[a]);
      CHECK(f.facet.lo[a] == up.box.lo[a]);
      CHECK(f.facet.hi[a] == up.box.hi[a]);
    }
  }
  // Every pair of face neighbours has an interface.
  int neighbours = 0;
  for (const auto& a : p.subdomains())
    for (const auto& b : p.subdomains()) {
      if (a.id >= b.id) continue;
      int distance = 0;
      for (std::size_t d = 0; d < a.cell.size(); ++d) distance += std::abs(a.cell[d] - b.cell[d]);
      if (distance == 1) {
        ++neighbours;
        CHECK(seen.count({a.id, b.id}) == 1);
      }
    }
  CHECK(neighbours == static_cast<int>(p.interfaces().size()));
}

std::string error_of(const geometry::Box& box, std::vector<std::string> names,
                     const PartitionSpec& spec) {
  try {
    Partition p(box, std::move(names), spec, "decomposition");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("split gives row-major ids with the first coordinate fastest and time slowest") {
  // x: 3 pieces, y: 2, t: 2 (time last).
  Partition p(unit_box(3), {"x", "y", "t"}, split({{"x", 3}, {"y", 2}, {"t", 2}}));
  CHECK(p.size() == 12);
  CHECK(p.pieces() == std::vector<int>{3, 2, 2});
  for (const auto& s : p.subdomains()) {
    CAPTURE(s.id);
    REQUIRE(s.cell.size() == 3);
    CHECK(s.id == s.cell[0] + 3 * (s.cell[1] + 2 * s.cell[2]));
    CHECK(s.box.lo[0] == doctest::Approx(s.cell[0] / 3.0));
    CHECK(s.box.lo[1] == doctest::Approx(s.cell[1] / 2.0));
    CHECK(s.box.lo[2] == doctest::Approx(s.cell[2] / 2.0));
  }
  // Subdomain 1 is the next one along x, 3 the next along y, 6 the next in time.
  CHECK(p.subdomains()[1].cell == std::vector<int>{1, 0, 0});
  CHECK(p.subdomains()[3].cell == std::vector<int>{0, 1, 0});
  CHECK(p.subdomains()[6].cell == std::vector<int>{0, 0, 1});
}

TEST_CASE("explicit cuts give row-major ids and boxes bounded by the cuts") {
  PartitionSpec spec;
  spec.cuts["x"] = {-0.6, 0.2, 0.5};
  spec.split["y"] = 2;
  Partition p(geometry::Box{{-1, 0}, {1, 2}}, {"x", "y"}, spec);
  CHECK(p.size() == 8);
  CHECK(p.cuts()[0] == std::vector<double>{-0.6, 0.2, 0.5});
  CHECK(p.cuts()[1] == std::vector<double>{1.0});
  const std::vector<double> xs{-1, -0.6, 0.2, 0.5, 1};
  for (const auto& s : p.subdomains()) {
    CHECK(s.id == s.cell[0] + 4 * s.cell[1]);
    CHECK(s.box.lo[0] == xs[s.cell[0]]);
    CHECK(s.box.hi[0] == xs[s.cell[0] + 1]);
  }
}

TEST_CASE("subdomain boxes tile the domain") {
  SUBCASE("2x2 unit square") {
    check_tiles(Partition(unit_box(2), {"x", "y"}, split({{"x", 2}, {"y", 2}})), unit_box(2));
  }
  SUBCASE("3x1x2 space-time box with negative coordinates") {
    const geometry::Box box{{-1, 0, 0.5}, {1, 3, 2}};
    check_tiles(Partition(box, {"x", "y", "t"}, split({{"x", 3}, {"t", 2}})), box);
  }
  SUBCASE("explicit cuts in 1-D") {
    PartitionSpec spec;
    spec.cuts["x"] = {-0.6, 0.2, 0.5};
    const geometry::Box box{{-1}, {1}};
    check_tiles(Partition(box, {"x"}, spec), box);
  }
  SUBCASE("no split: one subdomain, the whole box, no interfaces") {
    Partition p(unit_box(2), {"x", "y"}, PartitionSpec{});
    CHECK(p.size() == 1);
    CHECK(p.interfaces().empty());
    CHECK(p.subdomains()[0].box.lo == std::vector<double>{0, 0});
    CHECK(p.subdomains()[0].box.hi == std::vector<double>{1, 1});
  }
}

TEST_CASE("interfaces are found between face neighbours only") {
  SUBCASE("2x2 has 4 interfaces, no diagonal ones") {
    Partition p(unit_box(2), {"x", "y"}, split({{"x", 2}, {"y", 2}}));
    CHECK(p.interfaces().size() == 4);
    check_interfaces(p);
    CHECK(p.interfaces_of(0) == std::vector<int>{0, 2});
    CHECK(p.interfaces_of(3).size() == 2);
  }
  SUBCASE("2x2x2 has 12 interfaces") {
    Partition p(unit_box(3), {"x", "y", "z"}, split({{"x", 2}, {"y", 2}, {"z", 2}}));
    CHECK(p.interfaces().size() == 12);
    check_interfaces(p);
    for (int s = 0; s < 8; ++s) CHECK(p.interfaces_of(s).size() == 3);
  }
  SUBCASE("cuts x [-0.6, 0.2, 0.5] on [-1, 1] give 3 interfaces at the cuts") {
    PartitionSpec spec;
    spec.cuts["x"] = {-0.6, 0.2, 0.5};
    Partition p(geometry::Box{{-1}, {1}}, {"x"}, spec);
    REQUIRE(p.interfaces().size() == 3);
    check_interfaces(p);
    CHECK(p.interfaces()[0].position == -0.6);
    CHECK(p.interfaces()[1].position == 0.2);
    CHECK(p.interfaces()[2].position == 0.5);
    CHECK(p.interfaces_of(1) == std::vector<int>{0, 1});
  }
  SUBCASE("a time cut gives interfaces normal to the time axis") {
    Partition p(unit_box(2), {"x", "t"}, split({{"x", 2}, {"t", 3}}));
    CHECK(p.interfaces().size() == 3 + 4);
    check_interfaces(p);
    int time_interfaces = 0;
    for (const auto& f : p.interfaces()) time_interfaces += f.axis == 1;
    CHECK(time_interfaces == 4);
  }
}

TEST_CASE("interface points are identical on both sides and lie on the facet") {
  Partition p(geometry::Box{{-1, 0, 0}, {1, 2, 1}}, {"x", "y", "t"},
              split({{"x", 2}, {"y", 2}, {"t", 2}}));
  for (auto kind :
       {geometry::SamplerKind::uniform, geometry::SamplerKind::lhs, geometry::SamplerKind::sobol}) {
    for (const auto& f : p.interfaces()) {
      CAPTURE(f.id);
      // Both sides call with the same arguments and must get the same bits.
      const auto lower_side = interface_points(f, 100, kind, 1234);
      const auto upper_side = interface_points(f, 100, kind, 1234);
      REQUIRE(lower_side.sizes().vec() == std::vector<int64_t>{100, 3});
      CHECK((lower_side.scalar_type() == torch::kFloat64));
      CHECK(torch::equal(lower_side, upper_side));
      // On the cut along the axis, within the facet along the others.
      CHECK((lower_side.select(1, f.axis) == f.position).all().item<bool>());
      for (int a = 0; a < 3; ++a) {
        if (a == f.axis) continue;
        const auto c = lower_side.select(1, a);
        CHECK((c >= f.facet.lo[a]).all().item<bool>());
        CHECK((c <= f.facet.hi[a]).all().item<bool>());
        // Spread over the facet, not collapsed to a corner.
        CHECK(c.max().item<double>() - c.min().item<double>() > 0.5 * f.facet.extent(a));
      }
    }
  }
  // Different interfaces (same facet shape, translated) draw different points.
  const auto& a = p.interfaces()[0];
  const auto& b = p.interfaces()[1];
  REQUIRE(a.axis == b.axis);
  auto pa = interface_points(a, 64, geometry::SamplerKind::uniform, 1234);
  auto pb = interface_points(b, 64, geometry::SamplerKind::uniform, 1234);
  // Map both to unit coordinates on their facets: a different stream must show.
  for (int ax = 0; ax < 3; ++ax) {
    if (ax == a.axis) continue;
    pa.select(1, ax).sub_(a.facet.lo[ax]).div_(a.facet.extent(ax));
    pb.select(1, ax).sub_(b.facet.lo[ax]).div_(b.facet.extent(ax));
  }
  CHECK_FALSE(torch::equal(pa, pb));
  // A different seed gives different points too.
  CHECK_FALSE(torch::equal(interface_points(a, 64, geometry::SamplerKind::uniform, 1234),
                           interface_points(a, 64, geometry::SamplerKind::uniform, 1235)));
}

TEST_CASE("interface points in 1-D are the cut itself") {
  PartitionSpec spec;
  spec.cuts["x"] = {0.25};
  Partition p(geometry::Box{{0}, {1}}, {"x"}, spec);
  const auto x = interface_points(p.interfaces()[0], 5, geometry::SamplerKind::sobol, 7);
  CHECK(x.sizes().vec() == std::vector<int64_t>{5, 1});
  CHECK((x == 0.25).all().item<bool>());
}

TEST_CASE("subdomain_of puts a point on a cut into the lower subdomain") {
  Partition p(unit_box(2), {"x", "y"}, split({{"x", 2}, {"y", 2}}));
  auto x = torch::tensor({0.25, 0.25,  // 0
                          0.75, 0.25,  // 1
                          0.25, 0.75,  // 2
                          0.75, 0.75,  // 3
                          0.5,  0.25,  // on the x cut: lower (0)
                          0.5,  0.5,   // on both cuts: 0
                          0.75, 0.5,   // on the y cut: 1
                          0.5,  0.75,  // on the x cut, upper y: 2
                          0.0,  0.0,   // corners of the domain
                          1.0,  1.0},
                         torch::kFloat64)
               .reshape({-1, 2});
  const auto ids = p.subdomain_of(x);
  CHECK((ids.scalar_type() == torch::kInt64));
  const std::vector<int64_t> expected{0, 1, 2, 3, 0, 0, 1, 2, 0, 3};
  REQUIRE(ids.size(0) == static_cast<int64_t>(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(ids[i].item<int64_t>() == expected[i]);
  // float32 input is accepted too.
  CHECK(torch::equal(p.subdomain_of(x.to(torch::kFloat32)), ids));
  // Interface points belong to the lower side of their interface.
  for (const auto& f : p.interfaces()) {
    const auto on = interface_points(f, 32, geometry::SamplerKind::uniform, 3);
    // A point of an x interface may also lie on a y cut (a corner); only check the axis here.
    const auto owner = p.subdomain_of(on);
    for (int64_t i = 0; i < on.size(0); ++i) {
      const auto cell = p.subdomains()[owner[i].item<int64_t>()].cell;
      CHECK(cell[f.axis] == p.subdomains()[f.lower].cell[f.axis]);
    }
  }
}

TEST_CASE("rank_of_subdomains gives contiguous, balanced blocks") {
  CHECK(rank_of_subdomains(4, 2) == std::vector<int>{0, 0, 1, 1});
  CHECK(rank_of_subdomains(3, 2) == std::vector<int>{0, 0, 1});
  CHECK(rank_of_subdomains(2, 4) == std::vector<int>{0, 1});
  CHECK(rank_of_subdomains(4, 4) == std::vector<int>{0, 1, 2, 3});
  CHECK(rank_of_subdomains(8, 4) == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(rank_of_subdomains(5, 1) == std::vector<int>{0, 0, 0, 0, 0});
  for (int subdomains = 1; subdomains <= 12; ++subdomains)
    for (int ranks = 1; ranks <= 6; ++ranks) {
      CAPTURE(subdomains);
      CAPTURE(ranks);
      const auto rank = rank_of_subdomains(subdomains, ranks);
      REQUIRE(rank.size() == static_cast<std::size_t>(subdomains));
      CHECK(rank.front() == 0);
      for (int s = 1; s < subdomains; ++s)
        CHECK((rank[s] == rank[s - 1] || rank[s] == rank[s - 1] + 1));
      if (subdomains >= ranks) {
        // Every rank gets a block; block sizes differ by at most one.
        CHECK(rank.back() == ranks - 1);
        std::vector<int> count(ranks, 0);
        for (int r : rank) ++count[r];
        const auto [lo, hi] = std::minmax_element(count.begin(), count.end());
        CHECK(*lo >= 1);
        CHECK(*hi - *lo <= 1);
      }
    }
}

TEST_CASE("bad decompositions are rejected with messages that name the key") {
  const geometry::Box box{{-1, 0}, {1, 1}};
  const std::vector<std::string> names{"x", "y"};
  SUBCASE("a cut outside the range") {
    PartitionSpec spec;
    spec.cuts["x"] = {-0.5, 1.5};
    const auto message = error_of(box, names, spec);
    CHECK(message.find("decomposition.cuts.x[1]") != std::string::npos);
    CHECK(message.find("1.5") != std::string::npos);
  }
  SUBCASE("a cut on the boundary") {
    PartitionSpec spec;
    spec.cuts["x"] = {-1.0};
    CHECK(error_of(box, names, spec).find("decomposition.cuts.x[0]") != std::string::npos);
  }
  SUBCASE("cuts that do not increase") {
    PartitionSpec spec;
    spec.cuts["y"] = {0.5, 0.25};
    const auto message = error_of(box, names, spec);
    CHECK(message.find("decomposition.cuts.y") != std::string::npos);
    CHECK(message.find("increase") != std::string::npos);
  }
  SUBCASE("repeated cuts") {
    PartitionSpec spec;
    spec.cuts["y"] = {0.5, 0.5};
    CHECK(error_of(box, names, spec).find("decomposition.cuts.y") != std::string::npos);
  }
  SUBCASE("split on an unknown coordinate") {
    const auto message = error_of(box, names, split({{"z", 2}}));
    CHECK(message.find("decomposition.split") != std::string::npos);
    CHECK(message.find("'z'") != std::string::npos);
  }
  SUBCASE("cuts on an unknown coordinate") {
    PartitionSpec spec;
    spec.cuts["t"] = {0.5};
    const auto message = error_of(box, names, spec);
    CHECK(message.find("decomposition.cuts") != std::string::npos);
    CHECK(message.find("'t'") != std::string::npos);
  }
  SUBCASE("zero pieces") {
    CHECK(error_of(box, names, split({{"x", 0}})).find("decomposition.split.x") !=
          std::string::npos);
  }
  SUBCASE("split and cuts on the same coordinate") {
    PartitionSpec spec = split({{"x", 2}});
    spec.cuts["x"] = {0.5};
    CHECK(error_of(box, names, spec).find("'x'") != std::string::npos);
  }
  SUBCASE("the key prefix is the caller's") {
    try {
      Partition(box, names, split({{"q", 2}}), "cases/a.json: decomposition");
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("cases/a.json: decomposition.split") != std::string::npos);
    }
  }
}

namespace {

// Uniform points in the L-shaped domain [0,1]^2 without (0.5,1]^2 (area 0.75).
torch::Tensor lshape_samples(int64_t n) {
  torch::manual_seed(3);
  auto p = torch::rand({4 * n / 3 + 1000, 2}, torch::kFloat64);
  const auto outside = (p.select(1, 0) > 0.5).logical_and(p.select(1, 1) > 0.5);
  return p.index({outside.logical_not()}).narrow(0, 0, n);
}

}  // namespace

TEST_CASE("balance: measure cuts an L-shape into 3 slabs of equal area") {
  const auto samples = lshape_samples(60000);
  const auto p =
      Partition::balanced(geometry::Box{{0, 0}, {1, 1}}, {"x", "y"}, {{"x", 3}}, samples);
  REQUIRE(p.size() == 3);
  // Area left of x = c is c for c <= 0.5: shares of 0.25 put the cuts at 0.25 and 0.5.
  CHECK(p.subdomains()[0].box.hi[0] == doctest::Approx(0.25).epsilon(0.02));
  CHECK(p.subdomains()[1].box.hi[0] == doctest::Approx(0.5).epsilon(0.02));
  const auto counts = torch::bincount(p.subdomain_of(samples), {}, 3).to(torch::kFloat64) / 60000.0;
  for (int s = 0; s < 3; ++s)
    CHECK(counts[s].item<double>() == doctest::Approx(1.0 / 3).epsilon(0.001));
  REQUIRE(p.interfaces().size() == 2);
  CHECK(p.interfaces()[0].lower == 0);
  CHECK(p.interfaces()[0].upper == 1);
  CHECK(p.interfaces()[1].axis == 0);
  CHECK(p.subdomains()[0].cell.empty());
}

TEST_CASE("balance: measure bisects recursively; neighbours across a cut have the lower id low") {
  torch::manual_seed(4);
  // Points crowded to the left: x = u^2 has density ~ 1/sqrt(x).
  auto samples = torch::rand({40000, 2}, torch::kFloat64);
  samples.select(1, 0).pow_(2);
  const auto p =
      Partition::balanced(geometry::Box{{0, 0}, {1, 1}}, {"x", "y"}, {{"x", 2}, {"y", 2}}, samples);
  REQUIRE(p.size() == 4);
  CHECK(p.subdomains()[0].box.hi[0] == doctest::Approx(0.25).epsilon(0.03));  // median of u^2
  const auto counts = torch::bincount(p.subdomain_of(samples), {}, 4);
  for (int s = 0; s < 4; ++s)
    CHECK(counts[s].item<int64_t>() == doctest::Approx(10000).epsilon(0.001));
  for (const auto& f : p.interfaces()) {
    CHECK(f.lower < f.upper);
    CHECK(p.subdomains()[f.lower].box.hi[f.axis] == f.position);
    CHECK(p.subdomains()[f.upper].box.lo[f.axis] == f.position);
    for (int d = 0; d < 2; ++d) CHECK(f.facet.lo[d] <= f.facet.hi[d]);
  }
  CHECK(p.interfaces().size() >= 4);
  // A point on the x cut belongs to the lower id.
  const double cut = p.subdomains()[0].box.hi[0];
  CHECK(p.subdomain_of(torch::tensor({{cut, 0.01}}, torch::kFloat64))[0].item<int64_t>() == 0);
  // without_interfaces renumbers what is left.
  const auto fewer = p.without_interfaces({0});
  CHECK(fewer.interfaces().size() == p.interfaces().size() - 1);
  for (std::size_t i = 0; i < fewer.interfaces().size(); ++i)
    CHECK(fewer.interfaces()[i].id == static_cast<int>(i));
}

TEST_CASE("balance: measure with more pieces than sample points names the coordinate") {
  const auto samples = torch::tensor({{0.1, 0.5}, {0.9, 0.5}}, torch::kFloat64);
  try {
    Partition::balanced(geometry::Box{{0, 0}, {1, 1}}, {"x", "y"}, {{"y", 8}}, samples);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "decomposition.balance: too few sample points to place a cut along 'y'; use fewer pieces "
          "in decomposition.split");
  }
}
