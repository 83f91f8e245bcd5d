#include "tessera/partition/partition.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::partition {

Partition::Partition(const geometry::Box& box, std::vector<std::string> names,
                     const PartitionSpec& spec, const std::string& key)
    : names_(std::move(names)) {
  const int dims = box.dims();
  TESSERA_CHECK(static_cast<int>(names_.size()) == dims, key << ": internal: names and box differ");
  cuts_.assign(dims, {});
  for (int axis = 0; axis < dims; ++axis) {
    const auto& name = names_[axis];
    const double lo = box.lo[axis], hi = box.hi[axis];
    if (auto it = spec.split.find(name); it != spec.split.end()) {
      TESSERA_CHECK(it->second >= 1, key << ".split." << name << ": needs at least 1 piece");
      for (int k = 1; k < it->second; ++k) cuts_[axis].push_back(lo + (hi - lo) * k / it->second);
    }
    if (auto it = spec.cuts.find(name); it != spec.cuts.end()) {
      TESSERA_CHECK(cuts_[axis].empty(), key << ": '" << name << "' has both split and cuts; use one");
      for (std::size_t k = 0; k < it->second.size(); ++k) {
        const double c = it->second[k];
        TESSERA_CHECK(c > lo && c < hi, key << ".cuts." << name << "[" << k << "]: " << c
                                            << " is not inside (" << lo << ", " << hi << ")");
        TESSERA_CHECK(k == 0 || c > it->second[k - 1],
                      key << ".cuts." << name << ": positions must increase strictly");
      }
      cuts_[axis] = it->second;
    }
  }
  for (const auto& [name, pieces] : spec.split)
    TESSERA_CHECK(std::count(names_.begin(), names_.end(), name),
                  key << ".split: '" << name << "' is not a coordinate");
  for (const auto& [name, positions] : spec.cuts)
    TESSERA_CHECK(std::count(names_.begin(), names_.end(), name),
                  key << ".cuts: '" << name << "' is not a coordinate");

  // Subdomains row-major over the cut grid, first coordinate fastest (time slowest).
  const auto counts = pieces();
  int total = 1;
  for (int c : counts) total *= c;
  auto edges = [&](int axis, int index, double& lo, double& hi) {
    lo = index == 0 ? box.lo[axis] : cuts_[axis][index - 1];
    hi = index == counts[axis] - 1 ? box.hi[axis] : cuts_[axis][index];
  };
  for (int id = 0; id < total; ++id) {
    Subdomain s;
    s.id = id;
    s.box.lo.resize(dims);
    s.box.hi.resize(dims);
    int rest = id;
    for (int axis = 0; axis < dims; ++axis) {
      s.cell.push_back(rest % counts[axis]);
      rest /= counts[axis];
      edges(axis, s.cell[axis], s.box.lo[axis], s.box.hi[axis]);
    }
    subdomains_.push_back(s);
  }
  // Interfaces by axis, then by the lower subdomain's id: a fixed order, so ids are stable.
  int stride = 1;
  for (int axis = 0; axis < dims; ++axis) {
    for (const auto& s : subdomains_) {
      if (s.cell[axis] + 1 >= counts[axis]) continue;
      Interface f;
      f.id = static_cast<int>(interfaces_.size());
      f.lower = s.id;
      f.upper = s.id + stride;
      f.axis = axis;
      f.position = s.box.hi[axis];
      f.facet = s.box;
      f.facet.lo[axis] = f.facet.hi[axis] = f.position;
      interfaces_.push_back(f);
    }
    stride *= counts[axis];
  }
}

std::vector<int> Partition::pieces() const {
  std::vector<int> counts;
  for (const auto& c : cuts_) counts.push_back(static_cast<int>(c.size()) + 1);
  return counts;
}

torch::Tensor Partition::subdomain_of(const torch::Tensor& x) const {
  auto points = x.to(torch::kFloat64);
  auto id = torch::zeros({points.size(0)}, torch::kInt64);
  int64_t stride = 1;
  const auto counts = pieces();
  for (std::size_t axis = 0; axis < cuts_.size(); ++axis) {
    auto index = torch::zeros({points.size(0)}, torch::kInt64);
    const auto column = points.select(1, static_cast<int64_t>(axis));
    // Strictly greater: a point on a cut stays with the lower subdomain.
    for (double c : cuts_[axis]) index += (column > c).to(torch::kInt64);
    id += index * stride;
    stride *= counts[axis];
  }
  return id;
}

std::vector<int> Partition::interfaces_of(int id) const {
  std::vector<int> ids;
  for (const auto& f : interfaces_)
    if (f.lower == id || f.upper == id) ids.push_back(f.id);
  return ids;
}

std::vector<int> rank_of_subdomains(int subdomains, int ranks) {
  std::vector<int> rank(subdomains);
  for (int s = 0; s < subdomains; ++s)
    rank[s] = subdomains >= ranks
                  ? static_cast<int>(static_cast<int64_t>(s) * ranks / subdomains)
                  : s;
  return rank;
}

torch::Tensor interface_points(const Interface& interface, int64_t n, geometry::SamplerKind kind,
                               uint64_t seed) {
  const int dims = interface.facet.dims();
  core::Rng rng(seed, interface.id, "interface");
  auto unit = geometry::unit_samples(kind, n, dims - 1, rng);
  auto points = torch::empty({n, dims}, torch::kFloat64);
  int column = 0;
  for (int axis = 0; axis < dims; ++axis) {
    if (axis == interface.axis) {
      points.select(1, axis).fill_(interface.position);
    } else {
      const double lo = interface.facet.lo[axis], hi = interface.facet.hi[axis];
      points.select(1, axis).copy_(lo + (hi - lo) * unit.select(1, column++));
    }
  }
  return points;
}

}  // namespace tessera::partition
