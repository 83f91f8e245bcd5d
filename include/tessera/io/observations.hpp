#pragma once
/// Observations for `data` conditions (docs/case-format.md, "Conditions"): an HDF5 file with
/// /points [n, dims] (every network input: the spatial coordinates, then time) and /values/<field>
/// [n].
#include <string>
#include <vector>

namespace tessera::io {

struct Observations {
  int64_t count = 0;
  int dims = 0;
  std::vector<double> points;  ///< [count, dims] row-major
  std::vector<double> values;  ///< [count, fields] row-major, fields in the requested order
};

/// Reads and checks the file: shapes, one value per point for every field in `fields`, all
/// finite. Errors name the file (as `key` says where it came from) and the dataset, and list
/// what the file has. Not collective.
Observations read_observations(const std::string& path, int dims,
                               const std::vector<std::string>& fields, const std::string& key);

}  // namespace tessera::io
