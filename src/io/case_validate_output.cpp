// "output": directory (relative to the working directory), grid or mesh; every (0 only).
#include <algorithm>

#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

void read_output(const JsonNode& root, Case& c) {
  OutputSpec& out = c.output;
  out.directory = "results/" + c.name;
  const JsonNode node = root["output"];
  if (!node.present()) return;
  node.check_object(keys_at("output"));
  const JsonNode directory = node["directory"];
  out.directory = directory.string(out.directory);
  if (out.directory.empty()) directory.fail("expected a directory path, got \"\"");

  const JsonNode grid = node["grid"];
  const JsonNode mesh = node["mesh"];
  if (grid.present() && mesh.present())
    mesh.fail("give either output.grid (box-shaped domains) or output.mesh, not both");
  if (grid.present()) {
    const auto axes = coordinates_and_time(c);
    for (const auto& [axis, points] : grid.members()) {
      if (std::find(axes.begin(), axes.end(), axis) == axes.end())
        points.fail("'" + axis + "' is not a coordinate; expected one of " + quoted_list(axes) +
                    suggest(axis, axes));
      out.grid[axis] = points.integer(2);
    }
    for (const auto& axis : axes)
      if (!out.grid.count(axis))
        grid.fail("missing '" + axis + "'; give the number of points for every coordinate (" +
                  quoted_list(axes) + ")");
  }
  if (mesh.present()) {
    mesh.check_object(keys_at("output.mesh"));
    out.mesh_max_cell_size =
        mesh.required("max_cell_size", "\"max_cell_size\": 0.02").number(Range::positive);
    const JsonNode times = mesh["times"];
    if (times.present() && !c.time)
      times.fail("\"times\" is for space-time problems; this case has no \"time\"");
    out.mesh_times = times.integer(2, out.mesh_times);
  }
  if (const JsonNode points = node["points"]; points.present()) {
    const std::string path = points.string();
    const auto dot = path.rfind('.');
    const std::string extension = dot == std::string::npos ? "" : path.substr(dot);
    if (extension != ".h5" && extension != ".hdf5" && extension != ".csv")
      points.fail("expected a .h5 file (/points [n, inputs]) or a .csv file, got \"" + path + "\"");
    out.points_file = resolve_against_case(c, path);
  }
  // Snapshots during training are not written: 0 (the value documented as "only at the end")
  // stays valid, anything else is refused rather than silently ignored.
  const JsonNode every = node["every"];
  if (every.present() && every.integer(0) != 0)
    every.fail(
        "snapshots during training are not written (only the final solution is); remove "
        "the key, or use training.checkpoint_every to keep intermediate states");
}

}  // namespace tessera::io::detail
