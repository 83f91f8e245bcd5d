#pragma once
/// Private to io: the collective HDF5 side of write_grid_output (one object per file written).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hdf5_handle.hpp"
#include "tessera/io/grid_output.hpp"

namespace tessera::io::detail {

/// Root attribute names that write_grid_output sets itself.
bool is_reserved_attribute(const std::string& name);

/// A grid-output file created collectively with the MPI-IO driver. Every method is collective
/// over the communicator and must be called in the same order with the same names on all
/// ranks; data arguments are each rank's own (sorted, disjoint) points. Throws io::WriteError
/// with HDF5's own reason. The owner calls close(), also after a failure: the destructor
/// closes too, but a close that fails there can no longer be reported.
class ParallelGridFile {
 public:
  /// Creates (truncates) the file; nothing is open when this throws.
  ParallelGridFile(MPI_Comm comm, const std::string& path, const GridLayout& layout);

  /// /fields, and /grid and /mesh where the layout has them.
  void create_groups();
  /// /grid/<coord> float64 [n] for every axis (rank 0's data); with a mesh only the time axis.
  void write_axes();
  /// Mesh layouts only: /mesh/points float64 [n_points, dims] and /mesh/cells int64
  /// [n_cells, dims + 1] (rank 0's copy).
  void write_mesh();
  /// /fields/<name> float64 shaped layout.shape_c_order(), NaN where nobody writes. `indices`
  /// (flat, see GridLayout) sorted ascending.
  void write_field(const std::string& name, const std::vector<int64_t>& indices,
                   const std::vector<double>& values);
  /// /fields/subdomain int32, -1 where nobody writes.
  void write_subdomain(const std::vector<int64_t>& indices, const std::vector<int32_t>& values);
  /// /parameters/<name> float64 scalars (no group when empty).
  void write_parameters(const std::map<std::string, double>& parameters);
  /// Root attributes: case_name, coordinates, time_coordinate, then info's own.
  void write_root_attributes(const GridFileInfo& info);
  /// /xdmf/points [n, 3] and /xdmf/segments [max(n-1, 1), 2] for a line (first axis).
  void write_line_helpers();
  /// Writes HDF5's cached metadata (collective). A failure here leaves the file open and
  /// intact, unlike one inside close().
  void flush();
  /// Closes the file (collective; writes what is still cached); throws if HDF5 reports a
  /// failure. Then closed either way.
  void close();

 private:
  void write_points(const std::string& path, hid_t type, const void* fill,
                    const std::vector<int64_t>& indices, const void* values);
  void write_root_only(const std::string& name, hid_t dataset, hid_t mem_type, const void* data,
                       hsize_t count);
  /// A new [rows, columns] dataset `name` written from rank 0's `data` (collective).
  void write_matrix_root_only(const std::string& name, hid_t file_type, hid_t mem_type,
                              const void* data, hsize_t rows, hsize_t columns);

  std::string path_;
  GridLayout layout_;
  int rank_ = 0;
  H5Handle file_;
  H5Handle collective_;  ///< dataset transfer property list: collective MPI-IO
};

/// The /steps/<k>/<field> views of a space-time file, written by one process through HDF5's
/// serial driver after the parallel file is closed. Each virtual dataset created through the
/// MPI-IO driver keeps a duplicate of the file's communicator until the file closes, and MPICH
/// has a fixed number of communicators per process: the views of a few hundred output times
/// used them all up (docs/benchmarks.md, "Time-step views"). The serial driver has no
/// communicator to duplicate. Throws io::WriteError with HDF5's own reason; the owner calls
/// close(), also after a failure.
class StepViewFile {
 public:
  /// Opens the closed file `path` for writing; nothing is open when this throws.
  explicit StepViewFile(const std::string& path, const GridLayout& layout);
  /// /steps/<k>/<field> for every time index k and every field (the subdomain field int32).
  void write(const std::vector<std::string>& fields);
  void flush();
  void close();

 private:
  std::string path_;
  GridLayout layout_;
  H5Handle file_;
};

}  // namespace tessera::io::detail
