#include "tessera/io/grid_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <system_error>

#include "tessera/core/error.hpp"

namespace tessera::io {

namespace fs = std::filesystem;

int64_t MeshPoints::point_count() const {
  return dims > 0 ? static_cast<int64_t>(points.size()) / dims : 0;
}

int64_t MeshPoints::cell_count() const {
  return dims >= 0 ? static_cast<int64_t>(cells.size()) / (dims + 1) : 0;
}

int64_t GridLayout::size() const {
  if (mesh) {
    int64_t times = 1;
    if (has_time) times = axes.empty() ? 0 : static_cast<int64_t>(axes.back().size());
    return mesh->point_count() * times;
  }
  int64_t n = 1;
  for (const auto& axis : axes) n *= static_cast<int64_t>(axis.size());
  return axes.empty() ? 0 : n;
}

std::vector<int64_t> GridLayout::shape_c_order() const {
  std::vector<int64_t> shape;
  // With a mesh, axes holds at most the time axis; the points form one (fastest) dimension.
  for (auto it = axes.rbegin(); it != axes.rend(); ++it)
    shape.push_back(static_cast<int64_t>(it->size()));
  if (mesh) shape.push_back(mesh->point_count());
  return shape;
}

int GridLayout::spatial_dims() const {
  if (mesh) return mesh->dims;
  return static_cast<int>(names.size()) - (has_time ? 1 : 0);
}

int64_t GridLayout::flat_index(const std::vector<int64_t>& position) const {
  if (mesh) {
    const std::size_t expected = has_time ? 2 : 1;
    TESSERA_CHECK(position.size() == expected,
                  "mesh position has " << position.size() << " entries, expected " << expected
                                       << " (point index, then time index)");
    const int64_t n_points = mesh->point_count();
    TESSERA_CHECK(
        position[0] >= 0 && position[0] < n_points,
        "mesh point index " << position[0] << " outside the mesh of " << n_points << " points");
    if (!has_time) return position[0];
    const int64_t n_times = axes.empty() ? 0 : static_cast<int64_t>(axes.back().size());
    TESSERA_CHECK(position[1] >= 0 && position[1] < n_times,
                  "grid position " << position[1] << " outside axis '" << names.back() << "' of "
                                   << n_times << " points");
    return position[1] * n_points + position[0];
  }
  TESSERA_CHECK(position.size() == axes.size(), "grid position has " << position.size()
                                                                     << " entries for "
                                                                     << axes.size() << " axes");
  int64_t index = 0;
  for (std::size_t a = axes.size(); a-- > 0;) {
    TESSERA_CHECK(position[a] >= 0 && position[a] < static_cast<int64_t>(axes[a].size()),
                  "grid position " << position[a] << " outside axis '" << names[a] << "' of "
                                   << axes[a].size() << " points");
    index = index * static_cast<int64_t>(axes[a].size()) + position[a];
  }
  return index;
}

namespace {

void validate_names(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    TESSERA_CHECK(
        !name.empty() && name.find_first_of("/.,") == std::string::npos,
        "output grid axis name '" << name << "' must be non-empty without '/', '.' or ','");
  }
}

void validate_mesh(const GridLayout& layout) {
  const MeshPoints& mesh = *layout.mesh;
  TESSERA_CHECK(mesh.dims == 2 || mesh.dims == 3,
                "output mesh must be 2-D (triangles) or 3-D (tetrahedra), got dims " << mesh.dims);
  const std::size_t expected_names =
      static_cast<std::size_t>(mesh.dims) + (layout.has_time ? 1 : 0);
  TESSERA_CHECK(layout.names.size() == expected_names,
                "output mesh of dims " << mesh.dims << (layout.has_time ? " with time" : "")
                                       << " needs " << expected_names << " coordinate names, got "
                                       << layout.names.size());
  validate_names(layout.names);
  TESSERA_CHECK(layout.axes.size() == (layout.has_time ? 1u : 0u),
                "output mesh layout holds "
                    << layout.axes.size() << " axes; with a mesh, axes holds "
                    << (layout.has_time ? "only the time axis" : "nothing (no time)"));
  if (layout.has_time) {
    TESSERA_CHECK(!layout.axes.back().empty(),
                  "output grid axis '" << layout.names.back() << "' has no points");
  }
  const char* shape = mesh.dims == 2 ? "triangle" : "tetrahedron";
  const std::size_t corners = static_cast<std::size_t>(mesh.dims) + 1;
  TESSERA_CHECK(!mesh.points.empty() && mesh.points.size() % mesh.dims == 0,
                "output mesh points hold " << mesh.points.size()
                                           << " values, expected a positive multiple of dims "
                                           << mesh.dims << " ([n_points, dims] row-major)");
  TESSERA_CHECK(!mesh.cells.empty() && mesh.cells.size() % corners == 0,
                "output mesh cells hold " << mesh.cells.size()
                                          << " point indices, expected a positive multiple of "
                                          << corners << " (" << corners << " per " << shape << ")");
  const int64_t n_points = mesh.point_count();
  for (std::size_t k = 0; k < mesh.cells.size(); ++k) {
    TESSERA_CHECK(mesh.cells[k] >= 0 && mesh.cells[k] < n_points,
                  "output mesh " << shape << " " << k / corners << " refers to point "
                                 << mesh.cells[k] << ", outside 0.." << n_points - 1
                                 << " (the mesh has " << n_points
                                 << " points; indices are 0-based)");
  }
}

}  // namespace

void GridLayout::validate() const {
  if (mesh) return validate_mesh(*this);
  TESSERA_CHECK(!names.empty() && names.size() <= 8,
                "output grid needs 1 to 8 axes (space, then time), got " << names.size());
  TESSERA_CHECK(names.size() == axes.size(),
                "output grid has " << names.size() << " names but " << axes.size() << " axes");
  validate_names(names);
  for (std::size_t a = 0; a < axes.size(); ++a) {
    TESSERA_CHECK(!axes[a].empty(), "output grid axis '" << names[a] << "' has no points");
  }
}

void ensure_output_directory(const std::string& directory) {
  auto fail = [&](const std::string& reason) {
    TESSERA_FAIL("output.directory: cannot create or write '" << directory << "': " << reason
                                                              << "; choose a writable folder");
  };
  if (directory.empty()) fail("the name is empty");
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) fail(ec.message());
  if (!fs::is_directory(directory, ec)) fail("it exists but is not a directory");
  // Permission bits do not tell the whole story (read-only mounts, quotas, ACLs): write a file.
  const fs::path probe = fs::path(directory) / (".tessera_probe_" + std::to_string(::getpid()) +
                                                "_" + std::to_string(std::random_device{}()));
  {
    std::ofstream out(probe);
    if (!out || !(out << "probe\n") || !out.flush())
      fail(std::error_code(errno, std::generic_category()).message());
  }
  fs::remove(probe, ec);
}

}  // namespace tessera::io
