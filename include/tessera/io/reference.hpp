#pragma once
/// Reference solutions from HDF5 files laid out like Tessera's grid output
/// (docs/case-format.md, "Exact solutions and references"), e.g. tools/burgers_reference.py's
/// output.
#include <map>
#include <string>
#include <vector>

#include "tessera/io/grid_output.hpp"

namespace tessera::io {

/// A reference solution on a rectilinear grid. `fields[name]` holds layout.size() values in
/// flat-index order (first coordinate fastest, time slowest), like GridContribution.
struct Reference {
  GridLayout layout;
  std::map<std::string, std::vector<double>> fields;
};

/// Reads /grid/<coord> for each of `coordinates` (input order: spatial, then time; `has_time`
/// says the last one is time) and /fields/<field> for each of `fields`, each shaped
/// [n_last, ..., n_first] (any floating-point or integer type, converted to float64).
/// Errors (tessera::Error) name the file and the missing or misshapen dataset and list what the
/// file has. Not collective: any rank may call it; every rank reading is fine.
Reference read_reference(const std::string& path, const std::vector<std::string>& coordinates,
                         bool has_time, const std::vector<std::string>& fields);

}  // namespace tessera::io
