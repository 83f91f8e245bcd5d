#pragma once
/// From the case's `decomposition` to subdomain regions, interface sides and the rank map.
#include <optional>

#include "tessera/app/problem.hpp"
#include "tessera/nn/fbpinn.hpp"
#include "tessera/partition/partition.hpp"
#include "tessera/physics/interface_side.hpp"

namespace tessera::app {

/// An interface of an irregular domain whose facet has the domain on both sides over only a
/// part of it (the rest runs along a wall or outside the domain).
struct InterfaceCoverage {
  int interface = 0;
  double inside = 0;  ///< that part's share of the facet, in (0, 0.99)
};

struct Decomposition {
  partition::Partition partition;
  /// subdomain id -> the first rank of its replica group (the rank itself with one replica).
  std::vector<int> rank_of;
  physics::InterfaceWeights weights;  ///< zero where a term is off
  int64_t interface_points = 0;
  io::DecompositionMethod method = io::DecompositionMethod::none;
  int replicas = 1;  ///< ranks per subdomain (data-parallel replicas)
  /// fbpinn: the grids of overlapping subdomains, finest (split/cuts) first, then the coarser
  /// levels in the case's order. Their windowed sum is one network over the whole domain, so
  /// `partition` then holds a single subdomain.
  std::vector<nn::WindowGrid> windows;
  double overlap = 0.5;
  /// fbpinn: every rank trains the windowed sum, evaluating whole slices of every point set
  /// (train::SliceShare); 0 for the other methods.
  int slices = 0;
  /// Interfaces that only partly have the domain on both sides (irregular domains): `check`
  /// and `run` warn about them; their points are drawn only where both sides are inside.
  std::vector<InterfaceCoverage> partial_interfaces;
};

/// fbpinn's slices on `ranks` ranks: the case's, or when it gives none enough for 4 ranks,
/// one per rank on more.
int fbpinn_slices(const io::DecompositionSpec& spec, int ranks);

/// Cuts the problem's domain as the case says (`balance: measure`: recursive bisection into equal
/// shares of the domain; for an irregular domain, a subdomain that misses the domain is an
/// error and interfaces outside it are dropped) and maps subdomains to `ranks` ranks in
/// contiguous blocks; with `ranks_per_subdomain` = k, consecutive groups of k ranks each train
/// the same subdomains (ranks must be a multiple of k). Interface weights default by method: xpinn
/// continuity 1, and gradient 1 where second_order_across_cuts(), else residual 1; cpinn
/// continuity 1 and flux 1; `interface.weights` overrides them.
Decomposition build_decomposition(const io::Case& c, const Problem& p, int ranks);

/// Whether some equation holds a second derivative along an axis that an interface cuts.
bool second_order_across_cuts(const Problem& p, const partition::Partition& partition);

/// The subdomain holding each point, x [n, dims] -> int64 [n]; -1 for points outside an
/// irregular domain (so output there is NaN, docs/output-format.md, "Grid output").
torch::Tensor subdomain_in_domain(const partition::Partition& partition,
                                  const geometry::Domain& domain, const torch::Tensor& x);

/// Adds the interface terms to the problem's term list and weights (once, before training).
void add_interface_terms(Problem& p, const io::Case& c, const Decomposition& d);

/// The part of the domain that subdomain `s` covers, as a Domain of its own.
std::shared_ptr<const geometry::Domain> subdomain_region(const Problem& p,
                                                         const partition::Subdomain& s);

/// The boundary parts of `global`'s selector that lie on `region`'s boundary, as a selector
/// of `region`; nullopt when the region touches none of them.
std::optional<geometry::Selector> restrict_selector(const geometry::Domain& global,
                                                    const geometry::Selector& selector,
                                                    const geometry::Domain& region);

/// n points on interface `f`, drawn from `rng` (the stream keyed by seed and interface id, so
/// both sides get the same points); for an irregular domain only points with the domain on
/// both sides of the cut are kept (in rounds), not those on a wall the cut runs along.
torch::Tensor interface_points_in_domain(const partition::Interface& f, std::int64_t n,
                                         geometry::SamplerKind kind, core::Rng& rng,
                                         const geometry::Domain& domain);

/// Subdomain `s`'s sides of its interfaces (points generated from the interface ids; this
/// rank keeps `replica`'s slice of them).
std::vector<std::unique_ptr<physics::InterfaceSide>> interface_sides(const io::Case& c,
                                                                     const Problem& p,
                                                                     const Decomposition& d, int s,
                                                                     physics::Replica replica = {});

}  // namespace tessera::app
