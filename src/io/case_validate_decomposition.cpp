// "decomposition" and the per-subdomain overrides in "subdomains".
#include <algorithm>
#include <string>

#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

namespace {

/// The extent of a coordinate where the case fixes it (box/interval geometry, time range).
std::optional<std::array<double, 2>> extent_of(const Case& c, const std::string& name) {
  if (c.time && name == c.time->name) return c.time->range;
  const auto it = std::find(c.coordinates.begin(), c.coordinates.end(), name);
  const auto axis = static_cast<std::size_t>(it - c.coordinates.begin());
  if (axis < c.geometry.box.size()) return c.geometry.box[axis];
  return std::nullopt;
}

void check_axis_name(const JsonNode& node, const std::string& name, const Case& c) {
  const auto axes = coordinates_and_time(c);
  if (std::find(axes.begin(), axes.end(), name) == axes.end())
    node.fail("'" + name + "' is not a coordinate; expected one of " + quoted_list(axes) +
              suggest(name, axes));
}

/// How many subdomains the cut grid has.
int64_t subdomain_count(const DecompositionSpec& d) {
  if (d.method == DecompositionMethod::none) return 1;
  int64_t count = 1;
  for (const auto& [axis, pieces] : d.split) count *= pieces;
  for (const auto& [axis, cuts] : d.cuts) count *= static_cast<int64_t>(cuts.size()) + 1;
  return count;
}

/// The keys of "method": "fbpinn": overlapping subdomains summed through windows, so there are
/// no interfaces to weigh and no balanced bisection (the windows need a grid).
void read_fbpinn(const JsonNode& node, Case& c) {
  DecompositionSpec& d = c.decomposition;
  if (subdomain_count(d) < 2)
    node["method"].fail(
        "\"fbpinn\" needs decomposition.split or cuts with at least two pieces, e.g. "
        "\"split\": {\"x\": 16}");
  if (node["interface"].present())
    node["interface"].fail(
        "FBPINN subdomains overlap and are summed through windows, so there are no interface "
        "terms; remove decomposition.interface");
  if (node["balance"].present())
    node["balance"].fail(
        "FBPINN windows are laid on a grid of cells; remove balance and give the pieces with "
        "split or cuts");
  if (const JsonNode overlap = node["overlap"]; overlap.present()) {
    d.overlap = overlap.number(Range::positive);
    if (!(d.overlap <= 1))
      overlap.fail("expected a fraction of the cell width in (0, 1], got " + overlap.describe());
  }
  if (const JsonNode levels = node["levels"]; levels.present()) {
    for (const auto& level : levels.elements(0, "level")) {
      std::map<std::string, int> pieces;
      for (const auto& [axis, count] : level.members()) {
        check_axis_name(count, axis, c);
        pieces[axis] = static_cast<int>(std::min<int64_t>(count.integer(1), 1 << 20));
      }
      d.levels.push_back(pieces);
    }
  }
  if (const JsonNode slices = node["slices"]; slices.present()) {
    // Every slice is a pass of its own and a gathered gradient at every step.
    constexpr int64_t most = 1 << 16;
    const int64_t count = slices.integer(1);
    if (count > most)
      slices.fail("expected at most " + std::to_string(most) + " slices, got " +
                  std::to_string(count) + "; a few per rank are enough (e.g. 64)");
    d.slices = static_cast<int>(count);
  }
}

}  // namespace

void read_decomposition(const JsonNode& root, Case& c) {
  const JsonNode node = root["decomposition"];
  if (!node.present()) return;
  node.check_object(keys_at("decomposition"));
  DecompositionSpec& d = c.decomposition;
  d.method = node["method"].option(d.method);

  if (d.method == DecompositionMethod::none) {
    for (const char* key : {"split", "cuts", "balance", "interface", "overlap", "levels", "slices"})
      if (node[key].present())
        node[key].fail(
            std::string("needs a decomposition; set \"method\": \"xpinn\", \"cpinn\" or "
                        "\"fbpinn\" (method is \"none\": one network)"));
  }
  if (d.method != DecompositionMethod::fbpinn)
    for (const char* key : {"overlap", "levels", "slices"})
      if (node[key].present())
        node[key].fail(
            "applies to the overlapping subdomains of \"method\": \"fbpinn\" only; "
            "remove it or set the method to \"fbpinn\"");

  if (const JsonNode split = node["split"]; split.present()) {
    for (const auto& [axis, pieces] : split.members()) {
      check_axis_name(pieces, axis, c);
      d.split[axis] = static_cast<int>(std::min<int64_t>(pieces.integer(1), 1 << 20));
    }
  }
  if (const JsonNode cuts = node["cuts"]; cuts.present()) {
    for (const auto& [axis, list] : cuts.members()) {
      check_axis_name(list, axis, c);
      if (d.split.count(axis))
        list.fail("'" + axis +
                  "' is also in decomposition.split; give either split or cuts for a "
                  "coordinate");
      std::vector<double> positions;
      for (const auto& cut : list.elements(1, "cut position")) positions.push_back(cut.number());
      for (std::size_t i = 1; i < positions.size(); ++i)
        if (!(positions[i - 1] < positions[i]))
          list.fail("cut positions must be strictly increasing, got " + list.describe());
      if (const auto extent = extent_of(c, axis))
        for (std::size_t i = 0; i < positions.size(); ++i)
          if (!(positions[i] > (*extent)[0] && positions[i] < (*extent)[1]))
            list.elements()[i].fail("cut " + list.elements()[i].describe() + " is outside the " +
                                    "range of '" + axis + "' (" + number_text((*extent)[0]) + ", " +
                                    number_text((*extent)[1]) +
                                    "); cuts must lie strictly inside it");
      d.cuts[axis] = positions;
    }
  }
  if (const JsonNode balance = node["balance"]; balance.present()) {
    d.balance = balance.option<Balance>(std::nullopt, {Balance::measure});
    if (d.split.empty())
      balance.fail(
          "\"measure\" places the cuts of decomposition.split; add \"split\": "
          "{\"x\": 2, ...} to say how many pieces per coordinate");
    if (!d.cuts.empty())
      balance.fail("\"measure\" places the cuts itself; remove decomposition.cuts or balance");
  }
  if (const JsonNode iface = node["interface"]; iface.present()) {
    iface.check_object(keys_at("decomposition.interface"));
    d.interface.points = iface["points"].integer(1, d.interface.points);
    if (const JsonNode weights = iface["weights"]; weights.present()) {
      weights.check_object(keys_at("decomposition.interface.weights"));
      for (const auto& [term, w] : weights.members())
        d.interface.weights[term] = w.number(Range::non_negative);
    }
  }
  d.ranks_per_subdomain = static_cast<int>(
      std::min<int64_t>(node["ranks_per_subdomain"].integer(1, d.ranks_per_subdomain), 1 << 20));
  if (d.method == DecompositionMethod::fbpinn) read_fbpinn(node, c);

  if (d.method == DecompositionMethod::cpinn) {
    const JsonNode equations = root["equations"];
    for (std::size_t i = 0; i < c.equations.size(); ++i)
      if (c.equations[i].flux.empty())
        equations.elements()[i].fail(
            "missing \"flux\", which decomposition.method \"cpinn\" needs: one expression per "
            "spatial coordinate (" +
            quoted_list(c.coordinates) + "), e.g. [\"-u_x\", \"-u_y\"]");
  }
}

void check_fbpinn_network(const JsonNode& root, const Case& c) {
  if (c.decomposition.method != DecompositionMethod::fbpinn) return;
  const JsonNode network = root["network"];
  // The subdomain networks are stacked plain MLPs evaluated as one batch.
  for (const char* key : {"adaptive_activation", "fourier_features", "weight_factorization"})
    if (network.present() && network[key].present())
      network[key].fail(
          std::string("the subdomain networks of \"fbpinn\" are plain MLPs; remove ") + key +
          " (the windows already localise each network)");
  if (c.network.architecture != ArchitectureChoice::mlp)
    network["architecture"].fail(
        "the subdomain networks of \"fbpinn\" are plain MLPs; use \"mlp\" or remove the key");
  if (root["subdomains"].present())
    root["subdomains"].fail(
        "the subdomain networks of \"fbpinn\" share one architecture and their points come from "
        "the whole domain; remove \"subdomains\" and size them with network and "
        "training.collocation");
  const JsonNode conditions = root["conditions"];
  for (std::size_t k = 0; k < c.conditions.size(); ++k)
    if (c.conditions[k].type == ConditionKind::periodic && c.conditions[k].exact)
      conditions.elements()[k]["enforce"].fail(
          "exact periodicity feeds cos and sin of the coordinate to one network, which "
          "\"fbpinn\" does not have; use \"enforce\": \"penalty\" or remove it");
}

void read_subdomains(const JsonNode& root, Case& c) {
  check_fbpinn_network(root, c);
  const JsonNode node = root["subdomains"];
  if (!node.present()) return;
  const int64_t count = subdomain_count(c.decomposition);
  for (const auto& [id_text, entry] : node.members()) {
    const bool digits =
        !id_text.empty() && id_text.size() < 10 &&
        std::all_of(id_text.begin(), id_text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits || std::to_string(std::stol(id_text)) != id_text)
      entry.fail("'" + id_text +
                 "' is not a subdomain id; use \"0\", \"1\", ... (row-major over "
                 "the cut grid, first coordinate fastest)");
    const int id = static_cast<int>(std::stol(id_text));
    if (id >= count)
      entry.fail("subdomain " + id_text + " does not exist: the decomposition has " +
                 std::to_string(count) + " subdomain" + (count == 1 ? "" : "s") + " (ids 0 to " +
                 std::to_string(count - 1) + ")");
    entry.check_object(keys_at("subdomains.<id>"));
    SubdomainOverride o;
    if (entry["network"].present()) {
      o.network = read_network(entry["network"], c.network);
      // A warm start loads every subdomain's network: an initialisation would do nothing.
      if (c.warm_start && entry["network"]["init"].present())
        entry["network"]["init"].fail(
            "every network starts from network.init.from, so this subdomain's initialisation "
            "would have no effect; remove it");
    }
    if (const JsonNode collocation = entry["collocation"]; collocation.present()) {
      collocation.check_object(keys_at("subdomains.<id>.collocation"));
      o.collocation_points = collocation.required("points", "\"points\": 4096").integer(1);
    }
    c.subdomains[id] = o;
  }
}

}  // namespace tessera::io::detail
