#pragma once
/// Scattered points and values at them, in the two formats users bring and take away
/// (docs/output-format.md, "The trained model at other points: tessera evaluate"): HDF5 with
/// /points [n, dims] and /values/<name> [n] (the layout of observation files, so one program's
/// output is another's input), or CSV with one column per coordinate and per value. The
/// extension picks the format.
#include <string>
#include <vector>

#include "tessera/io/grid_output.hpp"

namespace tessera::io {

/// Points in the network's input order (the spatial coordinates, then time).
struct PointSet {
  int64_t count = 0;
  int dims = 0;
  std::vector<double> points;  ///< [count, dims] row-major
};

/// Named columns of values, one value per point.
struct PointValues {
  std::vector<std::string> names;
  std::vector<std::vector<double>> columns;
};

/// True for ".csv" (any case); false for ".h5", ".hdf5" and ".hdf"; any other extension is an
/// error naming `label` and the accepted ones.
bool is_csv_path(const std::string& path, const std::string& label);

/// Reads the points of `path`: HDF5 /points [n, coordinates.size()], or CSV whose rows hold
/// one value per coordinate, comma-separated; a first row of names (any order, matched to
/// `coordinates`) is optional, and empty lines and lines starting with '#' are skipped. Every
/// value must be finite. Errors start with `label` and name the line or dataset. Not collective.
PointSet read_point_file(const std::string& path, const std::vector<std::string>& coordinates,
                         const std::string& label);

/// Writes `points` and `values` to `path` (created or replaced): HDF5 /points and
/// /values/<name>, or CSV with a header of the coordinates and the value names. Throws
/// io::WriteError naming the file when it cannot be written. Not collective.
void write_point_values(const std::string& path, const std::vector<std::string>& coordinates,
                        const PointSet& points, const PointValues& values);

/// Writes values on a rectilinear grid (`layout` without a mesh) as an HDF5 file laid out like a
/// reference solution: /grid/<coordinate> and /fields/<name> shaped [n_last, ..., n_first]
/// (first coordinate fastest), so it can serve as another run's `reference`. Throws
/// io::WriteError naming the file when it cannot be written. Not collective.
void write_grid_values(const std::string& path, const GridLayout& layout,
                       const PointValues& values);

}  // namespace tessera::io
