// write_grid_output: the checks that every rank describes the same file, the room for it, the
// values (all ranks, parallel HDF5), the /steps views (rank 0, serial HDF5), and the XDMF file.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <system_error>

#include "hdf5_handle.hpp"
#include "hdf5_write.hpp"
#include "output_space.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/grid_output.hpp"
#include "tessera/io/write_error.hpp"
#include "tessera/io/xdmf.hpp"

namespace tessera::io {

namespace fs = std::filesystem;

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

/// The paths of one output: the final names and the temporary ones written first.
struct OutputPaths {
  fs::path final_h5, final_xmf, partial_h5, partial_xmf;
  OutputPaths(const std::string& directory, const std::string& stem)
      : final_h5(fs::path(directory) / (stem + ".h5")),
        final_xmf(fs::path(directory) / (stem + ".xmf")),
        partial_h5(fs::path(directory) / (stem + ".h5.partial")),
        partial_xmf(fs::path(directory) / (stem + ".xmf.partial")) {}
};

/// What goes into the HDF5 file, each rank's values sorted by their place in it.
struct FileContent {
  const GridLayout& layout;
  const GridContribution& contribution;
  const SortedContribution& sorted;
  const GridFileInfo& info;
  bool with_subdomain;
};

/// Runs `step`; the message of its failure, or "" when it succeeded.
template <class Step>
std::string attempt(Step&& step) {
  try {
    step();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

/// After a failed write, before the close: the values are no longer wanted, and emptying the
/// file frees their room (with the reserve's) for the metadata that the close still writes.
void free_room_of(const fs::path& partial, detail::OutputSpace& space) {
  space.release();
  if (::truncate(partial.c_str(), 0) != 0) {
    // Nothing was written yet: there is no room to free.
  }
}

/// The file's datasets and attributes, collectively; this rank's failure or "". On a failure
/// of any rank the file is emptied and closed on every rank.
std::string write_values(const parallel::Communicator& comm, const fs::path& partial,
                         const FileContent& content, detail::OutputSpace& space,
                         const detail::OutputSizes& sizes) {
  const GridLayout& layout = content.layout;
  std::optional<detail::ParallelGridFile> file;
  std::string message = attempt([&] {
    file.emplace(comm.native(), partial.string(), layout);
    file->create_groups();
    file->write_axes();
    if (layout.mesh) file->write_mesh();
    for (const auto& [name, values] : content.contribution.fields)
      file->write_field(name, content.sorted.indices, permuted(values, content.sorted.order));
    if (content.with_subdomain) {
      file->write_subdomain(content.sorted.indices,
                            permuted(content.contribution.subdomain, content.sorted.order));
    }
    file->write_parameters(content.info.parameters);
    file->write_root_attributes(content.info);
    if (!layout.mesh && layout.spatial_dims() <= 1) file->write_line_helpers();
    file->flush();
  });
  if (comm.any(!message.empty())) {
    if (comm.rank() == 0) free_room_of(partial, space);
    space.release();
    comm.barrier();  // the room is free before any rank writes metadata in the close
  } else {
    space.keep(sizes.view_metadata + sizes.xmf);
  }
  if (file) {
    const std::string closing = attempt([&] { file->close(); });
    if (message.empty()) message = closing;
  }
  return message;
}

/// Rank 0: the /steps/<k>/<field> views of a space-time file; the failure or "".
std::string write_views(const fs::path& partial, const FileContent& content,
                        detail::OutputSpace& space, const detail::OutputSizes& sizes) {
  std::vector<std::string> fields;
  for (const auto& [name, values] : content.contribution.fields) fields.push_back(name);
  if (content.with_subdomain) fields.push_back("subdomain");
  std::optional<detail::StepViewFile> file;
  std::string message = attempt([&] {
    file.emplace(partial.string(), content.layout);
    file->write(fields);
    file->flush();
  });
  if (!message.empty()) {
    free_room_of(partial, space);
  } else {
    space.keep(sizes.xmf);
  }
  if (file) {
    const std::string closing = attempt([&] { file->close(); });
    if (message.empty()) message = closing;
  }
  return message;
}

/// Rank 0: the XDMF file, then both files under their final names (the .h5 first, so that an
/// .xmf never points at a missing file).
void publish(const OutputPaths& paths, const std::string& xmf, detail::OutputSpace& space) {
  space.hand_over();  // the reserve is the .xmf.partial: writing it takes the room over
  {
    std::ofstream out(paths.partial_xmf);
    out << xmf;
    out.flush();
    if (!out.good())
      throw WriteError("cannot write " + paths.partial_xmf.string() + ": " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(paths.partial_h5, paths.final_h5, ec);
  if (ec) {
    throw WriteError("cannot rename " + paths.partial_h5.string() + " to " +
                     paths.final_h5.string() + ": " + ec.message());
  }
  fs::rename(paths.partial_xmf, paths.final_xmf, ec);
  if (ec) {
    throw WriteError("cannot rename " + paths.partial_xmf.string() + " to " +
                     paths.final_xmf.string() + ": " + ec.message());
  }
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

  const OutputPaths paths(directory, stem);
  // A failed write leaves nothing: the temporary files go, the final names keep what they held.
  auto agree_written = [&](const std::string& local_message, const std::string& stage) {
    if (!comm.any(!local_message.empty())) return;
    std::error_code ec;
    if (comm.rank() == 0) fs::remove(paths.partial_h5, ec), fs::remove(paths.partial_xmf, ec);
    throw WriteError(local_message.empty() ? "grid output: another rank failed while " + stage
                                           : local_message);
  };

  // 2. The room for the whole output, before HDF5 writes anything (output_space.hpp).
  std::vector<std::string> field_names;
  for (const auto& [name, values] : contribution.fields) field_names.push_back(name);
  const std::string xmf =
      comm.rank() != 0
          ? ""
          : xdmf_text(layout, field_names, with_subdomain, paths.final_h5.filename().string(),
                      info.case_name.empty() ? stem : info.case_name);
  const auto sizes = detail::output_sizes(layout, field_names.size(), with_subdomain,
                                          info.parameters.size(), xmf.size());
  detail::OutputSpace space(comm, paths.partial_xmf.string(), paths.final_h5.string(), sizes);

  // 3. The HDF5 file: the values collectively, then the time-step views on rank 0.
  const FileContent content{layout, contribution, sorted, info, with_subdomain};
  {
    detail::QuietHdf5Errors quiet;
    agree_written(write_values(comm, paths.partial_h5, content, space, sizes),
                  "writing " + paths.partial_h5.string());
    if (layout.has_time && layout.spatial_dims() >= 1) {
      agree_written(comm.rank() == 0 ? write_views(paths.partial_h5, content, space, sizes) : "",
                    "writing " + paths.partial_h5.string());
    }
  }

  // 4. Rank 0 publishes.
  if (comm.rank() == 0) message = attempt([&] { publish(paths, xmf, space); });
  agree_written(message, "publishing " + paths.final_h5.string());
}

}  // namespace tessera::io
