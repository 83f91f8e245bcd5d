#include "tessera/app/decomposition.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <sstream>
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/csg_shape.hpp"
#include "tessera/geometry/rejection.hpp"

namespace tessera::app {
namespace {

// Points that place balanced cuts and find empty subdomains: shares accurate to ~1e-3.
constexpr std::int64_t measure_samples = std::int64_t{1} << 16;
// Points per interface facet that decide whether it meets an irregular domain.
constexpr std::int64_t facet_samples = 4096;

std::string box_text(const geometry::Box& box, const std::vector<std::string>& names) {
  std::ostringstream out;
  for (int d = 0; d < box.dims(); ++d)
    out << (d ? ", " : "") << names[d] << " in [" << box.lo[d] << ", " << box.hi[d] << "]";
  return out.str();
}

/// Which of `points` (on interface f) have the domain on both sides: a step of a millionth of
/// the box's extent across the cut stays inside either way. A cut that runs along a wall (a
/// back step split at its step) has the outside on one side there: no interface condition
/// belongs on such points, the boundary conditions hold them.
torch::Tensor both_sides_inside(const partition::Interface& f, const geometry::Domain& domain,
                                const torch::Tensor& points) {
  const auto box = domain.bounding_box();
  const double step = 1e-6 * box.extent(f.axis);
  auto below = points.clone(), above = points.clone();
  below.select(1, f.axis).sub_(step);
  above.select(1, f.axis).add_(step);
  return domain.contains(below).logical_and(domain.contains(above));
}

/// An irregular domain: every subdomain must hold part of it (else an error that says how to
/// cut instead), interfaces with no point that has the domain on both sides are dropped, and
/// the others' share of such points is recorded in `coverage` where it is below 1.
void fit_to_domain(partition::Partition& partition, const geometry::Domain& domain,
                   const torch::Tensor& samples, const std::string& key,
                   std::vector<InterfaceCoverage>& coverage) {
  const auto counts = torch::bincount(partition.subdomain_of(samples), {}, partition.size());
  for (const auto& s : partition.subdomains()) {
    TESSERA_CHECK(counts[s.id].item<std::int64_t>() > 0,
                  key << ": subdomain " << s.id << " (" << box_text(s.box, partition.names())
                      << ") does not meet the domain; use \"balance\": \"measure\" (cuts that give "
                         "every subdomain the same share) or other cuts");
  }
  std::vector<int> outside;
  std::vector<double> inside_share;
  for (const auto& f : partition.interfaces()) {
    core::Rng rng(0, f.id, "interface-test");
    const auto points =
        partition::interface_points(f, facet_samples, geometry::SamplerKind::sobol, rng);
    const double share =
        both_sides_inside(f, domain, points).to(torch::kFloat64).mean().item<double>();
    if (share == 0.0)
      outside.push_back(f.id);
    else
      inside_share.push_back(share);
  }
  if (!outside.empty()) partition = partition.without_interfaces(outside);
  // The kept interfaces are renumbered in order, as inside_share is.
  for (const auto& f : partition.interfaces())
    if (inside_share[static_cast<std::size_t>(f.id)] < 0.99)
      coverage.push_back({f.id, inside_share[static_cast<std::size_t>(f.id)]});
}

/// The cell edges of a cut grid along every axis: the box's ends around its cuts.
nn::WindowGrid window_grid(const partition::Partition& grid, const geometry::Box& box) {
  nn::WindowGrid windows;
  for (int a = 0; a < box.dims(); ++a) {
    std::vector<double> edges{box.lo[a]};
    for (double cut : grid.cuts()[a]) edges.push_back(cut);
    edges.push_back(box.hi[a]);
    windows.edges.push_back(edges);
  }
  return windows;
}

}  // namespace

bool second_order_across_cuts(const Problem& p, const partition::Partition& partition) {
  std::set<int> cut_axes;
  for (const auto& f : partition.interfaces()) cut_axes.insert(f.axis);
  for (const auto& equation : p.equations)
    for (const auto& key : equation.residual.derivatives())
      for (int axis : key.wrt) {
        // lap(u) holds each spatial axis once and is second order in every one of them.
        const bool second = key.laplacian || std::count(key.wrt.begin(), key.wrt.end(), axis) >= 2;
        if (second && cut_axes.count(axis)) return true;
      }
  return false;
}

int fbpinn_slices(const io::DecompositionSpec& spec, int ranks) {
  return spec.slices.value_or(std::max(4, ranks));
}

Decomposition build_decomposition(const io::Case& c, const Problem& p, int ranks) {
  const auto& spec = c.decomposition;
  const int k = spec.ranks_per_subdomain;
  TESSERA_CHECK(ranks % k == 0, c.file << ": decomposition.ranks_per_subdomain: " << k
                                       << " ranks per subdomain need a "
                                       << "rank count that is a multiple of " << k << ", got "
                                       << ranks << " rank(s); start " << k * std::max(1, ranks / k)
                                       << " ranks (-n " << k * std::max(1, ranks / k)
                                       << ") or set ranks_per_subdomain to a divisor of " << ranks);
  const std::string key = c.file + ": decomposition";
  // Quasi-random points spread uniformly over the domain: they place balanced cuts and show
  // which subdomains and interfaces of an irregular domain meet it.
  core::Rng rng(c.seed, -1, "decomposition");
  const auto samples =
      p.domain->sample_interior(measure_samples, geometry::SamplerKind::sobol, rng);
  Decomposition d{
      spec.balance == io::Balance::measure
          ? partition::Partition::balanced(p.domain->bounding_box(), p.domain->input_names(),
                                           spec.split, samples, key)
          : partition::Partition(p.domain->bounding_box(), p.domain->input_names(),
                                 {spec.split, spec.cuts}, key),
      {},
      {},
      spec.interface.points,
      spec.method,
      1,
      {},
      spec.overlap,
      0,
      {}};
  if (spec.method == io::DecompositionMethod::fbpinn) {
    // The cut grid places the windows; training sees their sum as one network.
    const auto box = p.domain->bounding_box();
    d.windows.push_back(window_grid(d.partition, box));
    for (const auto& level : spec.levels)
      d.windows.push_back(
          window_grid(partition::Partition(box, p.domain->input_names(), {level, {}}, key), box));
    d.overlap = spec.overlap;
    d.partition = partition::Partition(box, p.domain->input_names(), {}, key);
    // Every rank trains the one windowed sum on whole slices of the points; the slices, not
    // the ranks, fix how sums are grouped, so any rank count up to them gives the same bits.
    d.slices = fbpinn_slices(spec, ranks);
    TESSERA_CHECK(d.slices >= ranks,
                  c.file << ": decomposition.slices: " << d.slices << " slice(s) cannot keep "
                         << ranks << " ranks busy (each rank evaluates whole slices); set slices "
                         << "to at least " << ranks << ", a multiple of the rank count for equal "
                         << "shares");
    TESSERA_CHECK(k == 1 || k == ranks,
                  c.file << ": decomposition.ranks_per_subdomain: with \"fbpinn\" every rank "
                            "shares the points of the windowed sum by slices; remove "
                            "ranks_per_subdomain (or set it to the rank count, "
                         << ranks << ")");
  }
  if (!p.domain->shape().as_box())
    fit_to_domain(d.partition, *p.domain, samples, key, d.partial_interfaces);
  d.replicas = d.slices > 0 ? ranks : k;
  d.rank_of = partition::rank_of_subdomains(d.partition.size(), ranks / d.replicas);
  for (int& first : d.rank_of) first *= d.replicas;
  if (spec.method == io::DecompositionMethod::xpinn) {
    d.weights.continuity = 1;
    // Value and residual continuity leave a kink free where the equations are of second order
    // across the cut. There value and normal derivative are the transmission conditions: with
    // both matched and the equation held on each side, the residual cannot jump, and its term
    // (second derivatives at the interface) would only slow the minimisation down.
    if (second_order_across_cuts(p, d.partition))
      d.weights.gradient = 1;
    else
      d.weights.residual = 1;
  }
  if (spec.method == io::DecompositionMethod::cpinn) d.weights.continuity = d.weights.flux = 1;
  auto weight = [&](const char* key, double& into) {
    if (auto it = spec.interface.weights.find(key); it != spec.interface.weights.end())
      into = it->second;
  };
  weight("continuity", d.weights.continuity);
  weight("residual", d.weights.residual);
  weight("flux", d.weights.flux);
  weight("gradient", d.weights.gradient);
  // A periodic condition couples the two ends of its axis: it needs them in one subdomain.
  for (const auto& cond : c.conditions) {
    if (cond.type != io::ConditionKind::periodic) continue;
    const int axis = p.domain->axis_index(cond.axis);
    TESSERA_CHECK(axis < 0 || d.partition.cuts()[axis].empty(),
                  c.file << ": " << cond.key << ": a periodic condition along '" << cond.axis
                         << "' cannot be combined with cuts along '" << cond.axis
                         << "'; cut along another coordinate");
  }
  return d;
}

torch::Tensor subdomain_in_domain(const partition::Partition& partition,
                                  const geometry::Domain& domain, const torch::Tensor& x) {
  auto owner = partition.subdomain_of(x);
  if (!domain.shape().as_box()) owner.masked_fill_(domain.contains(x).logical_not(), -1);
  return owner;
}

void add_interface_terms(Problem& p, const io::Case& c, const Decomposition& d) {
  if (d.partition.interfaces().empty()) return;
  const std::map<std::string, double> defaults = {{physics::continuity_term, d.weights.continuity},
                                                  {physics::residual_term, d.weights.residual},
                                                  {physics::flux_term, d.weights.flux},
                                                  {physics::gradient_term, d.weights.gradient}};
  for (const auto& name : physics::interface_term_names(d.weights)) {
    p.term_names.push_back(name);
    p.weights[name] = defaults.at(name);
  }
  // training.weights may also name interface terms (after the defaults).
  for (const auto& [name, w] : c.training.weights.fixed)
    if (defaults.count(name)) p.weights[name] = w;
}

std::shared_ptr<const geometry::Domain> subdomain_region(const Problem& p,
                                                         const partition::Subdomain& s) {
  const int spatial = p.domain->spatial_dims();
  geometry::Box box;
  box.lo.assign(s.box.lo.begin(), s.box.lo.begin() + spatial);
  box.hi.assign(s.box.hi.begin(), s.box.hi.begin() + spatial);
  std::optional<std::array<double, 2>> time;
  if (p.domain->has_time()) time = std::array<double, 2>{s.box.lo[spatial], s.box.hi[spatial]};
  std::shared_ptr<const geometry::Shape> shape = geometry::make_box(box);
  if (!p.domain->shape().as_box()) {
    // The domain's part in the cell; the domain comes first, so its boundary parts keep their
    // indices (restrict_selector relies on that).
    shape = std::make_shared<const geometry::CsgShape>(
        geometry::BooleanOp::intersection,
        std::vector<geometry::CsgShape::Child>{{p.domain->shape_ptr(), ""}, {shape, ""}},
        "subdomain " + std::to_string(s.id));
  }
  return std::make_shared<const geometry::Domain>(shape, p.domain->spatial_names(), time,
                                                  p.domain->time_name());
}

std::optional<geometry::Selector> restrict_selector(const geometry::Domain& global,
                                                    const geometry::Selector& selector,
                                                    const geometry::Domain& region) {
  geometry::Selector out;
  out.text = selector.text;
  const auto& global_parts = global.shape().boundary_parts();
  const auto& region_parts = region.shape().boundary_parts();
  const bool irregular = !global.shape().as_box();
  for (int part : selector.parts) {
    if (irregular) {  // same index in the region (subdomain_region); kept where it meets the cell
      if (region_parts[part].measure > 0.0) out.parts.push_back(part);
      continue;
    }
    const auto& plane = global_parts[part].plane;
    TESSERA_CHECK(plane, "boundary part '" << global_parts[part].label
                                           << "' has no plane; decomposition needs planar parts");
    const auto bbox = global.bounding_box();
    const double tolerance = 1e-9 * (bbox.hi[plane->axis] - bbox.lo[plane->axis]);
    for (std::size_t q = 0; q < region_parts.size(); ++q) {
      const auto& rp = region_parts[q].plane;
      if (rp && rp->axis == plane->axis && std::abs(rp->value - plane->value) <= tolerance)
        out.parts.push_back(static_cast<int>(q));
    }
  }
  if (global.has_time()) {
    out.initial = selector.initial && region.time_range()[0] == global.time_range()[0];
    out.terminal = selector.terminal && region.time_range()[1] == global.time_range()[1];
  }
  if (out.empty()) return std::nullopt;
  return out;
}

torch::Tensor interface_points_in_domain(const partition::Interface& f, std::int64_t n,
                                         geometry::SamplerKind kind, core::Rng& rng,
                                         const geometry::Domain& domain) {
  if (domain.shape().as_box()) return partition::interface_points(f, n, kind, rng);
  return geometry::collect_accepted(
      n,
      [&](std::int64_t m) {
        const auto points = partition::interface_points(f, m, kind, rng);
        return points.index({both_sides_inside(f, domain, points)});
      },
      "interface " + std::to_string(f.id));
}

std::vector<std::unique_ptr<physics::InterfaceSide>> interface_sides(const io::Case& c,
                                                                     const Problem& p,
                                                                     const Decomposition& d, int s,
                                                                     physics::Replica replica) {
  std::vector<std::unique_ptr<physics::InterfaceSide>> sides;
  const auto sampler = p.sampler;
  for (int id : d.partition.interfaces_of(s)) {
    const auto& f = d.partition.interfaces()[id];
    const core::Rng stream(c.seed, f.id, "interface");
    // The side keeps this for the whole run: it holds copies, not references.
    // It draws in float64; the side converts to the dtype of the stage it trains in.
    physics::InterfaceSide::PointDraw draw = [f, n = d.interface_points, sampler, domain = p.domain,
                                              device = p.device](core::Rng& rng) {
      return interface_points_in_domain(f, n, sampler, rng, *domain).to(device);
    };
    core::Rng first = stream;
    auto side = std::make_unique<physics::InterfaceSide>(
        id, f.lower == s ? 0 : 1, f.axis, draw(first).to(p.dtype),
        static_cast<int>(p.symbols.fields.size()), p.equations, p.fluxes, d.weights,
        p.domain->spatial_dims(), replica);
    side->set_redraw(std::move(draw), stream);
    sides.push_back(std::move(side));
  }
  return sides;
}

}  // namespace tessera::app
