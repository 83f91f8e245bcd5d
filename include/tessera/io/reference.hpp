#pragma once
/// Reference solutions from HDF5 files laid out like Tessera's grid output
/// (docs/case-format.md, "Exact solutions and references"), e.g. tools/burgers_reference.py's
/// output.
#include <map>
#include <string>
#include <vector>

#include "tessera/io/grid_output.hpp"

namespace tessera::io {

/// A reference solution on a rectilinear grid or at scattered points (finite-element nodes,
/// measurements). `fields[name]` holds one value per point: for a grid in flat-index order
/// (first coordinate fastest, time slowest), like GridContribution; for scattered points in
/// the order of `points`.
struct Reference {
  GridLayout layout;           ///< the inputs' names; a grid reference's axes (none if scattered)
  std::vector<double> points;  ///< scattered points [count, inputs] row-major; empty: a grid
  std::map<std::string, std::vector<double>> fields;
  bool scattered() const { return !points.empty(); }
  int64_t count() const;  ///< the number of points
};

/// Reads a grid reference, /grid/<coord> for each of `coordinates` (input order: spatial, then
/// time; `has_time` says the last one is time) and /fields/<field> for each of `fields`, each
/// shaped [n_last, ..., n_first]; or, when the file has /points and no /grid, a scattered one,
/// /points [n, inputs] and /values/<field> [n] (the layout of observation files). Any
/// floating-point or integer type, converted to float64. Errors (tessera::Error) name the file
/// and the missing or misshapen dataset and list what the file has. Not collective: any rank
/// may call it; every rank reading is fine.
Reference read_reference(const std::string& path, const std::vector<std::string>& coordinates,
                         bool has_time, const std::vector<std::string>& fields);

}  // namespace tessera::io
