#include "tessera/partition/partition.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::partition {

Partition::Partition(const geometry::Box& box, std::vector<std::string> names,
                     const PartitionSpec& spec, const std::string& key)
    : names_(std::move(names)), box_(box) {
  const int dims = box.dims();
  TESSERA_ASSERT(static_cast<int>(names_.size()) == dims, key << ": names and box differ");
  cuts_.assign(dims, {});
  for (int axis = 0; axis < dims; ++axis) {
    const auto& name = names_[axis];
    const double lo = box.lo[axis], hi = box.hi[axis];
    if (auto it = spec.split.find(name); it != spec.split.end()) {
      TESSERA_CHECK(it->second >= 1, key << ".split." << name << ": needs at least 1 piece");
      for (int k = 1; k < it->second; ++k) cuts_[axis].push_back(lo + (hi - lo) * k / it->second);
    }
    if (auto it = spec.cuts.find(name); it != spec.cuts.end()) {
      TESSERA_CHECK(cuts_[axis].empty(),
                    key << ": '" << name << "' has both split and cuts; use one");
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

namespace {

struct Piece {
  geometry::Box box;
  torch::Tensor samples;  // the sample points inside box
  std::vector<int> pieces;
};

// Cuts `piece` into leaves, appended to `leaves` low side first; records cut positions per axis.
void bisect(Piece piece, std::vector<geometry::Box>& leaves, std::vector<std::vector<double>>& cuts,
            const std::vector<std::string>& names, const std::string& key) {
  int axis = 0;
  for (int a = 1; a < static_cast<int>(piece.pieces.size()); ++a)
    if (piece.pieces[a] > piece.pieces[axis]) axis = a;
  const int total = piece.pieces[axis];
  if (total == 1) {
    leaves.push_back(piece.box);
    return;
  }
  const int low_pieces = total / 2;
  const auto n = piece.samples.size(0);
  const auto sorted = std::get<0>(piece.samples.select(1, axis).sort());
  const auto k = static_cast<int64_t>(std::llround(static_cast<double>(n) * low_pieces / total));
  TESSERA_CHECK(k >= 1 && k < n, key << ".balance: too few sample points to place a cut along '"
                                     << names[axis]
                                     << "'; use fewer pieces in decomposition.split");
  const double cut = 0.5 * (sorted[k - 1].item<double>() + sorted[k].item<double>());
  cuts[axis].push_back(cut);
  const auto column = piece.samples.select(1, axis);
  Piece low{piece.box, piece.samples.index({column <= cut}), piece.pieces};
  Piece high{piece.box, piece.samples.index({column > cut}), piece.pieces};
  low.box.hi[axis] = high.box.lo[axis] = cut;
  low.pieces[axis] = low_pieces;
  high.pieces[axis] = total - low_pieces;
  bisect(std::move(low), leaves, cuts, names, key);
  bisect(std::move(high), leaves, cuts, names, key);
}

}  // namespace

Partition Partition::balanced(const geometry::Box& box, std::vector<std::string> names,
                              const std::map<std::string, int>& split, const torch::Tensor& samples,
                              const std::string& key) {
  const int dims = box.dims();
  TESSERA_ASSERT(static_cast<int>(names.size()) == dims, key << ": names and box differ");
  TESSERA_ASSERT(samples.dim() == 2 && samples.size(1) == dims,
                 key << ": samples must be [n, " << dims << "]");
  Partition p;
  p.names_ = std::move(names);
  p.box_ = box;
  p.grid_ = false;
  p.cuts_.assign(dims, {});
  std::vector<int> pieces(dims, 1);
  for (const auto& [name, count] : split) {
    const auto it = std::find(p.names_.begin(), p.names_.end(), name);
    TESSERA_CHECK(it != p.names_.end(), key << ".split: '" << name << "' is not a coordinate");
    TESSERA_CHECK(count >= 1, key << ".split." << name << ": needs at least 1 piece");
    pieces[it - p.names_.begin()] = count;
  }
  std::vector<geometry::Box> leaves;
  bisect({box, samples.to(torch::kFloat64), pieces}, leaves, p.cuts_, p.names_, key);
  for (auto& axis_cuts : p.cuts_) {
    std::sort(axis_cuts.begin(), axis_cuts.end());
    axis_cuts.erase(std::unique(axis_cuts.begin(), axis_cuts.end()), axis_cuts.end());
  }
  for (std::size_t id = 0; id < leaves.size(); ++id)
    p.subdomains_.push_back({static_cast<int>(id), leaves[id], {}});
  p.find_interfaces();
  return p;
}

void Partition::find_interfaces() {
  const int dims = box_.dims();
  interfaces_.clear();
  for (int axis = 0; axis < dims; ++axis) {
    for (const auto& a : subdomains_) {
      for (const auto& b : subdomains_) {
        if (a.box.hi[axis] != b.box.lo[axis]) continue;  // cut positions are shared exactly
        Interface f;
        f.facet = a.box;
        bool overlap = true;
        for (int d = 0; d < dims && overlap; ++d) {
          if (d == axis) continue;
          f.facet.lo[d] = std::max(a.box.lo[d], b.box.lo[d]);
          f.facet.hi[d] = std::min(a.box.hi[d], b.box.hi[d]);
          overlap = f.facet.lo[d] < f.facet.hi[d];
        }
        if (!overlap) continue;
        f.id = static_cast<int>(interfaces_.size());
        f.lower = a.id;
        f.upper = b.id;
        f.axis = axis;
        f.position = a.box.hi[axis];
        f.facet.lo[axis] = f.facet.hi[axis] = f.position;
        interfaces_.push_back(f);
      }
    }
  }
}

Partition Partition::without_interfaces(const std::vector<int>& ids) const {
  Partition p = *this;
  p.interfaces_.clear();
  for (const auto& f : interfaces_) {
    if (std::find(ids.begin(), ids.end(), f.id) != ids.end()) continue;
    p.interfaces_.push_back(f);
    p.interfaces_.back().id = static_cast<int>(p.interfaces_.size()) - 1;
  }
  return p;
}

torch::Tensor Partition::subdomain_of(const torch::Tensor& x) const {
  if (!grid_) {
    auto points = x.to(torch::kFloat64).clone();
    // Lowest id wins on shared faces: assign in reverse so lower ids overwrite.
    for (int d = 0; d < box_.dims(); ++d) points.select(1, d).clamp_(box_.lo[d], box_.hi[d]);
    auto id = torch::zeros({points.size(0)}, torch::kInt64);
    for (auto s = subdomains_.rbegin(); s != subdomains_.rend(); ++s) {
      auto inside = torch::ones({points.size(0)}, torch::kBool);
      for (int d = 0; d < box_.dims(); ++d) {
        const auto column = points.select(1, d);
        inside = inside.logical_and(column >= s->box.lo[d]).logical_and(column <= s->box.hi[d]);
      }
      id.masked_fill_(inside, s->id);
    }
    return id;
  }
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
    rank[s] =
        subdomains >= ranks ? static_cast<int>(static_cast<int64_t>(s) * ranks / subdomains) : s;
  return rank;
}

torch::Tensor interface_points(const Interface& interface, int64_t n, geometry::SamplerKind kind,
                               uint64_t seed) {
  core::Rng rng(seed, interface.id, "interface");
  return interface_points(interface, n, kind, rng);
}

torch::Tensor interface_points(const Interface& interface, int64_t n, geometry::SamplerKind kind,
                               core::Rng& rng) {
  const int dims = interface.facet.dims();
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
