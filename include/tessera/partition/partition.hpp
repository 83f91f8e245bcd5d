#pragma once
/// Cutting the space-time bounding box into subdomains (case-format.md "Decomposition").
/// Pure: the same input gives the same partition on every rank; no MPI here.
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/geometry/box.hpp"
#include "tessera/geometry/sampler.hpp"

namespace tessera::partition {

/// One cell of the cut grid. `box` spans all inputs (time included, last).
struct Subdomain {
  int id = 0;
  geometry::Box box;
  std::vector<int> cell;  ///< index along each input axis
};

/// The shared face of two neighbouring subdomains: `lower` has the smaller id and lies on the
/// low side of the cut, so the normal from lower to upper is +e_axis.
struct Interface {
  int id = 0;
  int lower = 0, upper = 0;
  int axis = 0;            ///< input axis the cut is normal to (may be time)
  double position = 0.0;
  geometry::Box facet;     ///< lo[axis] == hi[axis] == position
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

  const std::vector<Subdomain>& subdomains() const { return subdomains_; }
  const std::vector<Interface>& interfaces() const { return interfaces_; }
  const std::vector<std::string>& names() const { return names_; }
  /// Interior cut positions per input axis (empty: not cut).
  const std::vector<std::vector<double>>& cuts() const { return cuts_; }
  /// Pieces per input axis.
  std::vector<int> pieces() const;
  int size() const { return static_cast<int>(subdomains_.size()); }

  /// The subdomain holding each point, x [n, dims] -> int64 [n]. A point on a cut belongs to
  /// the lower side, so interface values come from the lower id (output-format.md).
  torch::Tensor subdomain_of(const torch::Tensor& x) const;
  /// Ids of the interfaces that subdomain `id` takes part in, ascending.
  std::vector<int> interfaces_of(int id) const;

 private:
  std::vector<std::string> names_;
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

}  // namespace tessera::partition
