// Domain::parse_selector and friends: turning a condition's `on` string into boundary parts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/domain.hpp"

namespace tessera::geometry {
namespace {

// How far a plane selector's value may be from a face, relative to the extent along that axis:
// enough for values typed with six digits ("x=0.333333" for 1/3), far below any face spacing.
constexpr double plane_tolerance = 1e-6;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(" \t\n");
  return text.substr(first, last - first + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    pieces.push_back(
        text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return pieces;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

void add_part(Selector& out, int part) {
  if (std::find(out.parts.begin(), out.parts.end(), part) == out.parts.end())
    out.parts.push_back(part);
}

}  // namespace

std::string format_value(double value) {
  if (value == 0.0) return "0";  // no "-0"
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.12g", value);
  return buffer;
}

std::string Domain::part_name(int part) const {
  const auto& parts = shape_->boundary_parts();
  TESSERA_CHECK(part >= 0 && part < static_cast<int>(parts.size()), "no boundary part " << part);
  const auto& plane = parts[part].plane;
  if (!plane) return parts[part].label;
  return spatial_names_[plane->axis] + "=" + format_value(plane->value);
}

Selector Domain::parse_selector(const std::string& on, const std::string& key) const {
  Selector out;
  out.text = on;
  std::vector<std::string> visiting;
  parse_into(on, key, out, visiting);
  std::sort(out.parts.begin(), out.parts.end());
  return out;
}

void Domain::parse_into(const std::string& on, const std::string& key, Selector& out,
                        std::vector<std::string>& visiting) const {
  TESSERA_CHECK(!trim(on).empty(), key << ": no boundary part given; use 'boundary'"
                                       << (has_time() ? ", 'initial'" : "") << ", a face such as '"
                                       << part_name(0) << "', a tag, or several joined by '|'");
  for (const auto& piece : split(on, '|')) {
    const std::string term = trim(piece);
    TESSERA_CHECK(!term.empty(), key << ": empty part in '" << on
                                     << "'; join parts with a single '|', e.g. \"" << part_name(0)
                                     << "|" << part_name(1) << "\"");
    parse_term(term, on, key, out, visiting);
  }
}

void Domain::parse_term(const std::string& term, const std::string& on, const std::string& key,
                        Selector& out, std::vector<std::string>& visiting) const {
  const auto& parts = shape_->boundary_parts();
  if (term == "boundary") {
    for (int p = 0; p < static_cast<int>(parts.size()); ++p) add_part(out, p);
    return;
  }
  if (term == "initial") {
    TESSERA_CHECK(has_time(), key << ": 'initial' needs time, and this problem has none (add "
                                     "\"time\": {\"name\": \"t\", \"range\": [0, 1]} to the case, "
                                     "or select a spatial boundary part)");
    out.initial = true;
    return;
  }
  if (const auto eq = term.find('='); eq != std::string::npos) {
    const std::string name = trim(term.substr(0, eq));
    const std::string value_text = trim(term.substr(eq + 1));
    const int axis = axis_index(name);
    TESSERA_CHECK(axis >= 0, key << ": unknown coordinate '" << name << "' in '" << term << "'"
                                 << core::did_you_mean(name, input_names())
                                 << "; the coordinates are " << join(input_names(), ", "));
    const auto value = parse_number(value_text);
    TESSERA_CHECK(value, key << ": cannot read the number in '" << term << "'; write a plane as "
                             << name << "=<number>, e.g. '" << part_name(0) << "'");
    if (axis == spatial_dims()) {
      const auto [start, end] = *time_range_;
      const double tol = plane_tolerance * (end - start);
      if (std::abs(*value - start) <= tol) {
        out.initial = true;
      } else if (std::abs(*value - end) <= tol) {
        out.terminal = true;
      } else {
        TESSERA_FAIL(key << ": '" << term << "' is not at the start or end of the time range; use "
                         << time_name_ << "=" << format_value(start) << " (same as 'initial') or "
                         << time_name_ << "=" << format_value(end));
      }
      return;
    }
    const double tol = plane_tolerance * shape_->bounding_box().extent(axis);
    bool found = false;
    for (int p = 0; p < static_cast<int>(parts.size()); ++p) {
      const auto& plane = parts[p].plane;
      if (plane && plane->axis == axis && std::abs(plane->value - *value) <= tol) {
        add_part(out, p);
        found = true;
      }
    }
    if (!found) fail_unknown(term, key);
    return;
  }
  if (const auto tag = tags_.find(term); tag != tags_.end()) {
    if (std::find(visiting.begin(), visiting.end(), term) != visiting.end()) {
      visiting.push_back(term);
      TESSERA_FAIL(key << ": tags refer to each other in a cycle: " << join(visiting, " -> "));
    }
    visiting.push_back(term);
    parse_into(tag->second, key, out, visiting);
    visiting.pop_back();
    return;
  }
  if (const auto selected = shape_->select_parts(term)) {
    for (int p : *selected) add_part(out, p);
    return;
  }
  fail_unknown(term, key);
}

void Domain::fail_unknown(const std::string& term, const std::string& key) const {
  const auto& parts = shape_->boundary_parts();
  std::vector<std::string> faces, tags, candidates{"boundary"};
  bool all_planar = true;
  for (int p = 0; p < static_cast<int>(parts.size()); ++p) {
    faces.push_back(part_name(p));
    all_planar = all_planar && parts[p].plane.has_value();
  }
  for (const auto& [tag, text] : tags_) tags.push_back(tag);
  if (has_time()) candidates.push_back("initial");
  candidates.insert(candidates.end(), faces.begin(), faces.end());
  candidates.insert(candidates.end(), tags.begin(), tags.end());
  std::ostringstream also;
  also << "'boundary'";
  if (has_time()) {
    also << ", 'initial', " << time_name_ << "=" << format_value((*time_range_)[0]) << ", "
         << time_name_ << "=" << format_value((*time_range_)[1]);
  }
  TESSERA_FAIL(key << ": unknown boundary part '" << term << "'"
                   << core::did_you_mean(term, candidates) << " (the "
                   << (all_planar ? "faces" : "parts") << " are " << join(faces, ", ")
                   << "; tags: " << (tags.empty() ? "none" : join(tags, ", ")) << "; also "
                   << also.str() << ", or several joined by '|')");
}

std::pair<Selector, Selector> Domain::periodic_faces(const std::string& axis,
                                                     const std::string& key) const {
  const int index = axis_index(axis);
  TESSERA_CHECK(index >= 0,
                key << ": unknown axis '" << axis << "'" << core::did_you_mean(axis, spatial_names_)
                    << "; periodic conditions take one of " << join(spatial_names_, ", "));
  TESSERA_CHECK(index < spatial_dims(), key << ": periodic conditions need a spatial axis; '"
                                            << axis << "' is time (use one of "
                                            << join(spatial_names_, ", ") << ")");
  const auto box = shape_->as_box();
  TESSERA_CHECK(box, key << ": periodic conditions need a box geometry (opposite faces that match "
                            "point for point); this shape is not a box");
  Selector low, high;
  const auto& parts = shape_->boundary_parts();
  for (int p = 0; p < static_cast<int>(parts.size()); ++p) {
    const auto& plane = parts[p].plane;
    if (!plane || plane->axis != index) continue;
    if (plane->value == box->lo[index]) low.parts.push_back(p);
    if (plane->value == box->hi[index]) high.parts.push_back(p);
  }
  TESSERA_CHECK(low.parts.size() == 1 && high.parts.size() == 1,
                key << ": the shape has no single pair of faces along '" << axis << "'");
  low.text = part_name(low.parts[0]);
  high.text = part_name(high.parts[0]);
  return {low, high};
}

}  // namespace tessera::geometry
