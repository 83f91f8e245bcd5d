#pragma once
/// Cutting the space-time bounding box into subdomains (docs/case-format.md "Decomposition").
/// Pure: the same input gives the same partition on every rank; no MPI here.
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/box.hpp"
#include "tessera/geometry/sampler.hpp"

namespace tessera::partition {

/// One cell of the cut grid, or one leaf of a balanced bisection. `box` spans all inputs (time
/// included, last).
struct Subdomain {
  int id = 0;
  geometry::Box box;
  std::vector<int> cell;  ///< index along each input axis (cut grids only; empty for bisections)
};

/// The shared face of two neighbouring subdomains: `lower` has the smaller id and lies on the
/// low side of the cut, so the normal from lower to upper is +e_axis.
struct Interface {
  int id = 0;
  int lower = 0, upper = 0;
  int axis = 0;  ///< input axis the cut is normal to (may be time)
  double position = 0.0;
  geometry::Box facet;  ///< lo[axis] == hi[axis] == position
};

struct PartitionSpec {
  std::map<std::string, int> split;                 ///< coordinate -> uniform pieces
  std::map<std::string, std::vector<double>> cuts;  ///< coordinate -> interior cut positions
};

class Partition {
 public:
  /// `box` over all inputs named `names` (spatial, then time). Errors name `key`.
  Partition(const geometry::Box& box, std::vector<std::string> names, const PartitionSpec& spec,
            const std::string& key = "decomposition");

  /// `balance: measure`: recursive bisection of `box` so that every subdomain holds the same
  /// share of `samples` (points spread uniformly over the domain, [n, dims], time last): the
  /// axis with the most pieces left (ties: the first) is cut at the quantile that gives each
  /// side its share of the pieces, then each side is cut on its own. `split` gives the pieces per
  /// coordinate. Subdomain ids follow the bisection tree, low side first, so neighbours across a
  /// cut have the lower id on the low side; interfaces are the overlaps of touching faces.
  static Partition balanced(const geometry::Box& box, std::vector<std::string> names,
                            const std::map<std::string, int>& split, const torch::Tensor& samples,
                            const std::string& key = "decomposition");

  /// The same partition without the interfaces whose ids are listed (facets that lie outside an
  /// irregular domain); the remaining interfaces are renumbered in order.
  Partition without_interfaces(const std::vector<int>& ids) const;

  const std::vector<Subdomain>& subdomains() const { return subdomains_; }
  const std::vector<Interface>& interfaces() const { return interfaces_; }
  const std::vector<std::string>& names() const { return names_; }
  /// Interior cut positions per input axis (empty: not cut). For a bisection: every position
  /// at which some subdomain is cut, per axis.
  const std::vector<std::vector<double>>& cuts() const { return cuts_; }
  /// Pieces per input axis (cut grids).
  std::vector<int> pieces() const;
  int size() const { return static_cast<int>(subdomains_.size()); }

  /// The subdomain holding each point, x [n, dims] -> int64 [n]. A point on a cut belongs to
  /// the lower side, so interface values come from the lower id (docs/output-format.md "Grid
  /// output"). Points outside the box go to the nearest subdomain.
  torch::Tensor subdomain_of(const torch::Tensor& x) const;
  /// Ids of the interfaces that subdomain `id` takes part in, ascending.
  std::vector<int> interfaces_of(int id) const;

 private:
  Partition() = default;
  void find_interfaces();  ///< from touching boxes (bisections)

  std::vector<std::string> names_;
  geometry::Box box_;
  bool grid_ = true;
  std::vector<std::vector<double>> cuts_;
  std::vector<Subdomain> subdomains_;
  std::vector<Interface> interfaces_;
};

/// The rank of every subdomain: contiguous blocks, as even as possible (subdomain s goes to
/// rank floor(s * ranks / subdomains) when there are at least as many subdomains as ranks;
/// subdomain s to rank s otherwise).
std::vector<int> rank_of_subdomains(int subdomains, int ranks);

/// n points on the interface's facet, float64 [n, dims], drawn from a stream keyed by
/// (seed, interface id): both sides generate identical points without sending coordinates.
torch::Tensor interface_points(const Interface& interface, int64_t n, geometry::SamplerKind kind,
                               uint64_t seed);
/// The same from a given stream (each call draws new points): for rejection against an
/// irregular domain, where both sides draw in the same rounds.
torch::Tensor interface_points(const Interface& interface, int64_t n, geometry::SamplerKind kind,
                               core::Rng& rng);

}  // namespace tessera::partition
