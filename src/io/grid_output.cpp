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

int64_t GridLayout::size() const {
  int64_t n = 1;
  for (const auto& axis : axes) n *= static_cast<int64_t>(axis.size());
  return axes.empty() ? 0 : n;
}

std::vector<int64_t> GridLayout::shape_c_order() const {
  std::vector<int64_t> shape;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) shape.push_back(static_cast<int64_t>(it->size()));
  return shape;
}

int GridLayout::spatial_dims() const {
  return static_cast<int>(names.size()) - (has_time ? 1 : 0);
}

int64_t GridLayout::flat_index(const std::vector<int64_t>& position) const {
  TESSERA_CHECK(position.size() == axes.size(),
                "grid position has " << position.size() << " entries for " << axes.size() << " axes");
  int64_t index = 0;
  for (std::size_t a = axes.size(); a-- > 0;) {
    TESSERA_CHECK(position[a] >= 0 && position[a] < static_cast<int64_t>(axes[a].size()),
                  "grid position " << position[a] << " outside axis '" << names[a] << "' of "
                                   << axes[a].size() << " points");
    index = index * static_cast<int64_t>(axes[a].size()) + position[a];
  }
  return index;
}

void GridLayout::validate() const {
  TESSERA_CHECK(!names.empty() && names.size() <= 4,
                "output grid needs 1 to 4 axes (space, then time), got " << names.size());
  TESSERA_CHECK(names.size() == axes.size(),
                "output grid has " << names.size() << " names but " << axes.size() << " axes");
  TESSERA_CHECK(spatial_dims() <= 3, "output grid has more than 3 spatial axes");
  for (std::size_t a = 0; a < axes.size(); ++a) {
    TESSERA_CHECK(!names[a].empty() && names[a].find_first_of("/.,") == std::string::npos,
                  "output grid axis name '" << names[a] << "' must be non-empty without '/', '.' or ','");
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
  const fs::path probe = fs::path(directory) / (".tessera_probe_" + std::to_string(::getpid()) + "_" +
                                                 std::to_string(std::random_device{}()));
  {
    std::ofstream out(probe);
    if (!out || !(out << "probe\n") || !out.flush()) fail(std::error_code(errno, std::generic_category()).message());
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
                  "grid output: flat index " << s.indices[i] << " outside the grid of " << total << " points");
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
  // ranks that did not fail would wait forever inside HDF5 (architecture.md: never a hang).
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
      TESSERA_CHECK(!detail::is_reserved_attribute(name), "grid output: attribute name '" << name << "' is reserved");
    }
    for (const auto& [name, value] : info.attributes_string) {
      TESSERA_CHECK(!detail::is_reserved_attribute(name), "grid output: attribute name '" << name << "' is reserved");
    }
  } catch (const Error& e) {
    message = e.what();
  }
  agree(message.empty(), message, "checking its contribution");

  std::string signature = directory + "|" + stem + "|";
  for (const auto& n : layout.shape_c_order()) signature += std::to_string(n) + ",";
  for (const auto& [name, values] : contribution.fields) signature += name + ";";
  std::vector<double> sig = {digest(signature), -digest(signature)};
  comm.max_in_place(sig);
  TESSERA_CHECK(sig[0] == -sig[1], "grid output: ranks disagree on the directory, stem, grid shape or "
                                   "field names (every rank must list every field, also with no points)");

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
    for (const auto& [name, values] : contribution.fields) {
      file.write_field(name, sorted.indices, permuted(values, sorted.order));
    }
    if (with_subdomain) file.write_subdomain(sorted.indices, permuted(contribution.subdomain, sorted.order));
    file.write_parameters(info.parameters);
    file.write_root_attributes(info);
    if (layout.has_time && layout.spatial_dims() >= 1) {
      std::vector<std::string> step_fields = field_names;
      if (with_subdomain) step_fields.push_back("subdomain");
      file.write_time_step_views(step_fields);
    }
    if (layout.spatial_dims() == 1 || layout.spatial_dims() == 0) file.write_line_helpers();
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
                                                       << final_h5.string() << ": " << ec.message());
      fs::rename(partial_xmf, final_xmf, ec);
      TESSERA_CHECK(!ec, "grid output: cannot rename " << partial_xmf.string() << " to "
                                                       << final_xmf.string() << ": " << ec.message());
    } catch (const Error& e) {
      message = e.what();
    }
  }
  agree(message.empty(), message, "publishing " + final_h5.string());
}

}  // namespace tessera::io
