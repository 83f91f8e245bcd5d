#include "tessera/io/grid_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <system_error>

#include "hdf5_handle.hpp"
#include "hdf5_write.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/xdmf.hpp"

namespace tessera::io {

namespace fs = std::filesystem;
using detail::H5Handle;

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
  TESSERA_CHECK(!names.empty() && names.size() <= 4,
                "output grid needs 1 to 4 axes (space, then time), got " << names.size());
  TESSERA_CHECK(names.size() == axes.size(),
                "output grid has " << names.size() << " names but " << axes.size() << " axes");
  TESSERA_CHECK(spatial_dims() <= 3, "output grid has more than 3 spatial axes");
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

namespace {

/// Local checks of one rank's contribution; returns its indices sorted plus the permutation,
/// so that file offsets rise monotonically (what MPI-IO file views want).
struct SortedContribution {
  std::vector<int64_t> indices;
  std::vector<std::size_t> order;  ///< indices[i] = contribution.indices[order[i]]
};

SortedContribution check_and_sort(const GridLayout& layout, const GridContribution& c,
                                  bool with_subdomain) {
  const std::size_t n = c.indices.size();
  for (const auto& [name, values] : c.fields) {
    TESSERA_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "subdomain",
                  "grid output: invalid field name '" << name << "'");
    TESSERA_CHECK(values.size() == n, "grid output: field '" << name << "' has " << values.size()
                                                             << " values for " << n << " indices");
  }
  TESSERA_CHECK(!with_subdomain || c.subdomain.size() == n,
                "grid output: subdomain has " << c.subdomain.size() << " values for " << n
                                              << " indices (every rank must give it or none)");
  SortedContribution s;
  s.order.resize(n);
  std::iota(s.order.begin(), s.order.end(), std::size_t{0});
  std::sort(s.order.begin(), s.order.end(),
            [&](std::size_t a, std::size_t b) { return c.indices[a] < c.indices[b]; });
  s.indices.resize(n);
  const int64_t total = layout.size();
  for (std::size_t i = 0; i < n; ++i) {
    s.indices[i] = c.indices[s.order[i]];
    TESSERA_CHECK(s.indices[i] >= 0 && s.indices[i] < total,
                  "grid output: flat index " << s.indices[i] << " outside the grid of " << total
                                             << " points");
    TESSERA_CHECK(i == 0 || s.indices[i] != s.indices[i - 1],
                  "grid output: flat index " << s.indices[i] << " given twice on one rank");
  }
  return s;
}

/// A 52-bit FNV-1a digest, exact in a double, so ranks can compare what they were given.
double digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return static_cast<double>(h >> 12);
}

template <class T>
std::vector<T> permuted(const std::vector<T>& values, const std::vector<std::size_t>& order) {
  std::vector<T> out(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) out[i] = values[order[i]];
  return out;
}

}  // namespace

void write_grid_output(const parallel::Communicator& comm, const std::string& directory,
                       const std::string& stem, const GridLayout& layout,
                       const GridContribution& contribution, const GridFileInfo& info) {
  // Every failure must be seen by every rank before the next collective HDF5 call, or the
  // ranks that did not fail would wait forever inside HDF5 (docs/architecture.md: never a hang).
  auto agree = [&](bool ok, const std::string& local_message, const std::string& stage) {
    if (comm.any(!ok)) {
      TESSERA_FAIL((ok ? "grid output: another rank failed while " + stage : local_message));
    }
  };

  // 1. Local validation, then make sure all ranks describe the same file.
  std::string message;
  SortedContribution sorted;
  const bool with_subdomain = comm.any(!contribution.subdomain.empty());
  try {
    TESSERA_CHECK(!stem.empty() && stem.find('/') == std::string::npos,
                  "grid output: invalid file stem '" << stem << "'");
    layout.validate();
    sorted = check_and_sort(layout, contribution, with_subdomain);
    for (const auto& [name, value] : info.attributes_double) {
      TESSERA_CHECK(!detail::is_reserved_attribute(name),
                    "grid output: attribute name '" << name << "' is reserved");
    }
    for (const auto& [name, value] : info.attributes_string) {
      TESSERA_CHECK(!detail::is_reserved_attribute(name),
                    "grid output: attribute name '" << name << "' is reserved");
    }
  } catch (const Error& e) {
    message = e.what();
  }
  agree(message.empty(), message, "checking its contribution");

  std::string signature = directory + "|" + stem + "|";
  for (const auto& n : layout.shape_c_order()) signature += std::to_string(n) + ",";
  for (const auto& [name, values] : contribution.fields) signature += name + ";";
  if (layout.mesh) {
    // Only rank 0's mesh is written: a rank with another mesh would have numbered its points
    // differently, and its values would land on the wrong points.
    const auto& mesh = *layout.mesh;
    signature += "|mesh" + std::to_string(mesh.dims) + "|";
    signature += std::to_string(digest(std::string(
        reinterpret_cast<const char*>(mesh.points.data()), mesh.points.size() * sizeof(double))));
    signature +=
        "|" + std::to_string(digest(std::string(reinterpret_cast<const char*>(mesh.cells.data()),
                                                mesh.cells.size() * sizeof(int64_t))));
  }
  std::vector<double> sig = {digest(signature), -digest(signature)};
  comm.max_in_place(sig);
  TESSERA_CHECK(sig[0] == -sig[1],
                "grid output: ranks disagree on the directory, stem, grid shape, mesh or "
                "field names (every rank must list every field, also with no points, "
                "and hold the same mesh)");

  const fs::path final_h5 = fs::path(directory) / (stem + ".h5");
  const fs::path final_xmf = fs::path(directory) / (stem + ".xmf");
  const fs::path partial_h5 = fs::path(directory) / (stem + ".h5.partial");
  const fs::path partial_xmf = fs::path(directory) / (stem + ".xmf.partial");

  std::vector<std::string> field_names;
  for (const auto& [name, values] : contribution.fields) field_names.push_back(name);

  // 2. The HDF5 file, collectively.
  try {
    detail::QuietHdf5Errors quiet;
    detail::ParallelGridFile file(comm.native(), partial_h5.string(), layout);
    file.write_axes();
    if (layout.mesh) file.write_mesh();
    for (const auto& [name, values] : contribution.fields) {
      file.write_field(name, sorted.indices, permuted(values, sorted.order));
    }
    if (with_subdomain)
      file.write_subdomain(sorted.indices, permuted(contribution.subdomain, sorted.order));
    file.write_parameters(info.parameters);
    file.write_root_attributes(info);
    if (layout.has_time && layout.spatial_dims() >= 1) {
      std::vector<std::string> step_fields = field_names;
      if (with_subdomain) step_fields.push_back("subdomain");
      file.write_time_step_views(step_fields);
    }
    if (!layout.mesh && layout.spatial_dims() <= 1) file.write_line_helpers();
    file.close();
    message.clear();
  } catch (const Error& e) {
    message = e.what();
  }
  agree(message.empty(), message, "writing " + partial_h5.string());

  // 3. Rank 0 publishes: the .h5 under its final name first, then the .xmf that points at it.
  if (comm.rank() == 0) {
    try {
      {
        std::ofstream out(partial_xmf);
        out << xdmf_text(layout, field_names, with_subdomain, final_h5.filename().string(),
                         info.case_name.empty() ? stem : info.case_name);
        out.flush();
        TESSERA_CHECK(out.good(), "grid output: cannot write " << partial_xmf.string());
      }
      std::error_code ec;
      fs::rename(partial_h5, final_h5, ec);
      TESSERA_CHECK(!ec, "grid output: cannot rename " << partial_h5.string() << " to "
                                                       << final_h5.string() << ": "
                                                       << ec.message());
      fs::rename(partial_xmf, final_xmf, ec);
      TESSERA_CHECK(!ec, "grid output: cannot rename " << partial_xmf.string() << " to "
                                                       << final_xmf.string() << ": "
                                                       << ec.message());
    } catch (const Error& e) {
      message = e.what();
    }
  }
  agree(message.empty(), message, "publishing " + final_h5.string());
}

}  // namespace tessera::io
