#pragma once
/// Tabulated data files (the case's `data` section): values on a rectilinear grid over some of
/// the case's coordinates, laid out like a reference file (docs/case-format.md "Tabulated data").
#include <string>
#include <vector>

namespace tessera::io {

struct DataTable {
  std::vector<std::string> axes;          ///< the coordinates it depends on, in case order
  std::vector<std::vector<double>> grid;  ///< each axis's values
  std::vector<double> values;             ///< one per grid point, the first axis fastest
};

/// Reads /grid/<coordinate> for every coordinate of `coordinates` (time included) that the
/// file has, and `dataset` shaped [n_last, ..., n_first] over those axes. Errors start with
/// `key` (e.g. "data.kappa") and name the file, the dataset and the fix.
DataTable read_data_table(const std::string& path, const std::string& dataset,
                          const std::vector<std::string>& coordinates, const std::string& key);

}  // namespace tessera::io
