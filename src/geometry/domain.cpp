#include "tessera/geometry/domain.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {
namespace {

// [n, 1] filled with `value`: the time column of a cap.
torch::Tensor constant_column(std::int64_t n, double value) {
  return torch::full({n, 1}, value, torch::kFloat64);
}

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

Domain::Domain(std::shared_ptr<const Shape> shape, std::vector<std::string> spatial_names,
               std::optional<std::array<double, 2>> time_range, std::string time_name,
               std::map<std::string, std::string> tags)
    : shape_(std::move(shape)),
      spatial_names_(std::move(spatial_names)),
      time_range_(time_range),
      time_name_(std::move(time_name)),
      tags_(std::move(tags)) {
  TESSERA_CHECK(shape_ != nullptr, "geometry: no shape");
  TESSERA_CHECK(static_cast<int>(spatial_names_.size()) == shape_->dims(),
                "coordinates: the geometry is " << shape_->dims() << "-D but "
                                                << spatial_names_.size()
                                                << " coordinates are named");
  std::set<std::string> seen;
  for (const auto& name : spatial_names_) {
    TESSERA_CHECK(seen.insert(name).second, "coordinates: '" << name << "' appears twice");
  }
  if (time_range_) {
    const auto [start, end] = *time_range_;
    TESSERA_CHECK(std::isfinite(start) && std::isfinite(end) && start < end,
                  "time.range: needs start < end, got [" << start << ", " << end << "]");
    TESSERA_CHECK(!seen.count(time_name_),
                  "time.name: '" << time_name_ << "' is also a spatial coordinate");
  }
  for (const auto& [tag, text] : tags_) {
    const std::string key = "geometry.tags." + tag;
    TESSERA_CHECK(is_identifier(tag),
                  key << ": a tag name is an identifier (letters, digits, '_')");
    TESSERA_CHECK(tag != "boundary" && tag != "initial",
                  key << ": '" << tag << "' is reserved; choose another tag name");
    parse_selector(text, key);  // throws with the tag's key when the text is invalid
  }
}

std::vector<std::string> Domain::input_names() const {
  auto names = spatial_names_;
  if (has_time()) names.push_back(time_name_);
  return names;
}

std::array<double, 2> Domain::time_range() const {
  TESSERA_CHECK(has_time(), "this problem has no time range");
  return *time_range_;
}

int Domain::axis_index(const std::string& name) const {
  for (int d = 0; d < spatial_dims(); ++d) {
    if (spatial_names_[d] == name) return d;
  }
  if (has_time() && name == time_name_) return spatial_dims();
  return -1;
}

Box Domain::bounding_box() const {
  Box box = shape_->bounding_box();
  if (has_time()) {
    box.lo.push_back((*time_range_)[0]);
    box.hi.push_back((*time_range_)[1]);
  }
  return box;
}

double Domain::measure() const {
  const double duration = has_time() ? (*time_range_)[1] - (*time_range_)[0] : 1.0;
  return shape_->measure() * duration;
}

torch::Tensor Domain::contains(const torch::Tensor& points) const {
  TESSERA_CHECK(points.dim() == 2 && points.size(1) == dims(),
                "Domain::contains: expected points [n, " << dims() << "], got " << points.sizes());
  auto inside = shape_->contains(points.narrow(1, 0, spatial_dims()));
  if (has_time()) {
    const auto [start, end] = *time_range_;
    const double tol = 1e-12 * std::max(1.0, end - start);
    const auto t = points.select(1, spatial_dims());
    inside = inside.logical_and(t >= start - tol).logical_and(t <= end + tol);
  }
  return inside;
}

torch::Tensor Domain::sample_interior(std::int64_t n, SamplerKind kind, core::Rng& rng) const {
  auto points = shape_->sample_interior(n, has_time() ? 1 : 0, kind, rng);
  if (has_time()) {
    const auto [start, end] = *time_range_;
    points.select(1, spatial_dims()).mul_(end - start).add_(start);
  }
  return points;
}

std::vector<double> Domain::part_measures(const Selector& selector) const {
  const double duration = has_time() ? (*time_range_)[1] - (*time_range_)[0] : 1.0;
  const auto& parts = shape_->boundary_parts();
  std::vector<double> measures;
  for (int part : selector.parts) {
    TESSERA_CHECK(part >= 0 && part < static_cast<int>(parts.size()),
                  "selector '" << selector.text << "' does not belong to this domain");
    measures.push_back(parts[part].measure * duration);
  }
  if (selector.initial) measures.push_back(shape_->measure());
  if (selector.terminal) measures.push_back(shape_->measure());
  return measures;
}

double Domain::measure(const Selector& selector) const {
  const auto measures = part_measures(selector);
  return std::accumulate(measures.begin(), measures.end(), 0.0);
}

std::vector<std::string> Domain::part_names(const Selector& selector) const {
  std::vector<std::string> names;
  for (int part : selector.parts) names.push_back(part_name(part));
  if (selector.initial) names.push_back("initial");
  if (selector.terminal) names.push_back(time_name_ + "=" + format_value((*time_range_)[1]));
  return names;
}

BoundarySample Domain::sample_boundary(const Selector& selector, std::int64_t n, SamplerKind kind,
                                       core::Rng& rng) const {
  TESSERA_CHECK(!selector.empty(), "sample_boundary: the selector selects nothing");
  TESSERA_CHECK(n >= 0, "sample_boundary: point count must not be negative, got " << n);
  TESSERA_CHECK(!(selector.initial || selector.terminal) || has_time(),
                "selector '" << selector.text << "' has time caps but the domain has no time");
  const auto counts = split_counts(n, part_measures(selector));
  const int extra = has_time() ? 1 : 0;
  std::vector<torch::Tensor> points, normals;
  std::size_t next = 0;
  for (int part : selector.parts) {
    const std::int64_t count = counts[next++];
    if (count == 0) continue;
    auto sample = shape_->sample_part(part, count, extra, kind, rng);
    if (has_time()) {
      const auto [start, end] = *time_range_;
      sample.points = torch::cat({sample.points, sample.extra * (end - start) + start}, 1);
    }
    points.push_back(sample.points);
    normals.push_back(sample.normals);
  }
  const std::pair<bool, int> caps[] = {{selector.initial, 0}, {selector.terminal, 1}};
  for (const auto& [selected, end] : caps) {
    if (!selected) continue;
    const std::int64_t count = counts[next++];
    if (count == 0) continue;
    const auto time = constant_column(count, (*time_range_)[end]);
    points.push_back(torch::cat({shape_->sample_interior(count, 0, kind, rng), time}, 1));
    normals.push_back(torch::zeros({count, spatial_dims()}, torch::kFloat64));
  }
  if (points.empty()) {
    return {torch::zeros({0, dims()}, torch::kFloat64),
            torch::zeros({0, spatial_dims()}, torch::kFloat64)};
  }
  return {torch::cat(points, 0), torch::cat(normals, 0)};
}

std::pair<BoundarySample, BoundarySample> Domain::sample_periodic(
    const std::pair<Selector, Selector>& faces, std::int64_t n, SamplerKind kind,
    core::Rng& rng) const {
  const auto box = shape_->as_box();
  const auto& parts = shape_->boundary_parts();
  TESSERA_CHECK(
      box && faces.first.parts.size() == 1 && faces.second.parts.size() == 1 &&
          !faces.first.initial && !faces.first.terminal && parts[faces.first.parts[0]].plane &&
          parts[faces.second.parts[0]].plane &&
          parts[faces.first.parts[0]].plane->axis == parts[faces.second.parts[0]].plane->axis,
      "sample_periodic: the selectors must be two opposite faces from periodic_faces");
  const Plane to = *parts[faces.second.parts[0]].plane;
  BoundarySample low = sample_boundary(faces.first, n, kind, rng);
  BoundarySample high{low.points.clone(), -low.normals};
  high.points.select(1, to.axis).fill_(to.value);
  return {low, high};
}

std::vector<std::int64_t> split_counts(std::int64_t n, const std::vector<double>& measures) {
  TESSERA_CHECK(n >= 0, "split_counts: point count must not be negative, got " << n);
  const std::size_t parts = measures.size();
  std::vector<std::int64_t> counts(parts, 0);
  double total = 0.0;
  std::size_t nonzero = 0;
  for (double m : measures) {
    TESSERA_CHECK(m >= 0.0 && std::isfinite(m), "split_counts: bad measure " << m);
    total += m;
    if (m > 0.0) ++nonzero;
  }
  if (n == 0 || total <= 0.0) return counts;

  std::vector<double> remainder(parts, 0.0);
  std::int64_t assigned = 0;
  for (std::size_t i = 0; i < parts; ++i) {
    const double quota = static_cast<double>(n) * measures[i] / total;
    counts[i] = static_cast<std::int64_t>(std::floor(quota));
    remainder[i] = quota - static_cast<double>(counts[i]);
    assigned += counts[i];
  }
  std::vector<std::size_t> order(parts);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  // Round-off can leave the floors one over or under n: settle it on the largest remainders.
  for (std::size_t k = 0; assigned < n; k = (k + 1) % parts) {
    if (measures[order[k]] > 0.0) {
      ++counts[order[k]];
      ++assigned;
    }
  }
  while (assigned > n) {
    const auto largest = std::max_element(counts.begin(), counts.end()) - counts.begin();
    --counts[largest];
    --assigned;
  }
  // Every part with measure gets a point when there are enough: take from the largest counts.
  if (static_cast<std::size_t>(n) >= nonzero) {
    for (std::size_t i = 0; i < parts; ++i) {
      if (measures[i] > 0.0 && counts[i] == 0) {
        const auto largest = std::max_element(counts.begin(), counts.end()) - counts.begin();
        --counts[largest];
        ++counts[i];
      }
    }
  }
  return counts;
}

}  // namespace tessera::geometry
