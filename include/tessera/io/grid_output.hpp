#pragma once
/// Grid output: the solution on a rectilinear (space or space-time) grid or on an unstructured
/// triangle / tetrahedron mesh, written collectively to `<directory>/<stem>.h5` with parallel
/// HDF5, plus `<stem>.xmf` for ParaView (layout: docs/output-format.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/parallel/environment.hpp"

namespace tessera::io {

/// An unstructured simplex mesh of the spatial domain: triangles (dims 2) or tetrahedra (dims 3).
/// Every rank holds the same copy (write_grid_output writes rank 0's).
struct MeshPoints {
  int dims = 0;                ///< 2 (triangles) or 3 (tetrahedra)
  std::vector<double> points;  ///< [n_points, dims] row-major: x0, y0, (z0,) x1, ...
  std::vector<int64_t> cells;  ///< [n_cells, dims + 1] row-major point indices (0-based)

  /// points.size() / dims (0 while dims is not positive).
  int64_t point_count() const;
  /// cells.size() / (dims + 1) (0 while dims is negative).
  int64_t cell_count() const;
};

/// The output grid: one axis per coordinate in input order (spatial coordinates, then time when
/// `has_time`). Flat point index: first coordinate fastest, time slowest, i.e. the C-order offset
/// into an array shaped `shape_c_order()`.
///
/// With `mesh` set, the spatial part is the mesh's points instead of axes: `names` still lists
/// every coordinate (spatial names, then time), `axes` holds only the time axis (when has_time;
/// else it is empty), the shape is [nt?, n_points] and the flat index is
/// time_index * n_points + point_index.
struct GridLayout {
  std::vector<std::string> names;         ///< e.g. {"x", "t"}
  std::vector<std::vector<double>> axes;  ///< axis values, one vector per name, each non-empty
                                          ///< (with a mesh: only the time axis, if any)
  bool has_time = false;                  ///< the last axis is time
  std::optional<MeshPoints> mesh;         ///< set: the spatial points are this mesh's

  /// Number of output points: product of the axis lengths; with a mesh
  /// n_points * (number of times, or 1).
  int64_t size() const;
  /// The HDF5 dataset shape, slowest first: [nt?, nz?, ny?, nx]; with a mesh [nt?, n_points].
  std::vector<int64_t> shape_c_order() const;
  /// Spatial dimensions: names.size() minus one when has_time (mesh->dims with a mesh).
  int spatial_dims() const;
  /// Flat index of the point with per-axis positions `position` (input order, x first); with a
  /// mesh `position` is {point_index, time_index?}.
  int64_t flat_index(const std::vector<int64_t>& position) const;
  /// Throws tessera::Error unless names/axes agree and every axis is non-empty; with a mesh also
  /// unless dims is 2 or 3, names.size() == dims + has_time, points and cells hold whole rows
  /// and every cell's point index is in range.
  void validate() const;
};

/// What one rank contributes: values at the listed flat indices (any order; no index twice on a
/// rank; disjoint across ranks). Every rank must list the same field names, also a rank with no
/// points (its vectors are then empty). `fields[name].size() == indices.size()`; `subdomain` is
/// either empty on every rank (no /fields/subdomain) or as long as `indices` on every rank.
struct GridContribution {
  std::vector<int64_t> indices;
  std::map<std::string, std::vector<double>> fields;  ///< "u", "residual_poisson", "u_exact", ...
  std::vector<int32_t> subdomain;
};

/// File-level metadata; identical on every rank.
struct GridFileInfo {
  std::string case_name;  ///< root attribute "case_name"
  std::map<std::string, double>
      attributes_double;  ///< root attributes: iterations, wall_seconds, rel_l2_u ...
  std::map<std::string, std::string> attributes_string;  ///< root attributes (strings)
  std::map<std::string, double> parameters;              ///< /parameters/<name> float64 scalars
};

/// Writes `<directory>/<stem>.h5` (all ranks, MPI-IO driver, collective point-selection writes)
/// and `<directory>/<stem>.xmf` (rank 0), each under a temporary name renamed into place only
/// when complete. Datasets (docs/output-format.md, "Grid output"):
///   /grid/<coord>        float64 [n_coord], every axis including time (with a mesh: time only)
///   /mesh/points         mesh only: float64 [n_points, dims] (rank 0's copy)
///   /mesh/cells          mesh only: int64 [n_cells, dims + 1] (rank 0's copy)
///   /fields/<field>      float64 [nt?, nz?, ny?, nx] or [nt?, n_points]; NaN where no rank wrote
///   /fields/subdomain    int32, same shape; -1 where no rank wrote
///   /parameters/<name>   float64 scalar (only when there are parameters)
///   / attributes         case_name, coordinates ("x,y,t"), time_coordinate (when has_time),
///                        and GridFileInfo's attributes
///   /steps/<k>/<field>   space-time only: virtual datasets [nz?, ny?, nx] or [n_points] =
///                        time slice k
///   /xdmf/points, /xdmf/segments   1-D space only: [n, 3] float64 / [n-1, 2] int32 line helpers
/// Overwrites existing files of those names. Collective over comm.
void write_grid_output(const parallel::Communicator& comm, const std::string& directory,
                       const std::string& stem, const GridLayout& layout,
                       const GridContribution& contribution, const GridFileInfo& info);

/// Creates `directory` with its parents if needed and proves it writable by creating and
/// removing a probe file. Throws tessera::Error "output.directory: cannot create or write
/// '<dir>': <reason>; choose a writable folder". Call it (on every rank) before training, so a
/// bad directory fails in seconds, not after hours.
void ensure_output_directory(const std::string& directory);

}  // namespace tessera::io
