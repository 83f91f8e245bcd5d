#pragma once
// Reading whole numeric datasets from HDF5 files users bring (references, observations).
#include <string>
#include <vector>

#include "hdf5_handle.hpp"

namespace tessera::io::detail {

/// Names of the links in `group` ("/grid"), for error messages; "no /grid group" when absent.
std::string list_group(hid_t file, const std::string& group);

/// Reads a whole numeric dataset as float64 and returns its shape in `shape`. Errors start
/// with `label` (e.g. "data file 'obs.h5'") and name the dataset.
std::vector<double> read_doubles(hid_t file, const std::string& label, const std::string& dataset,
                                 std::vector<hsize_t>& shape);

/// /points of a points file: [n, dims] with n > 0 and every value finite, as float64
/// row-major; `count` gets n. Errors start with `label`, name the dataset and list what the
/// file has.
std::vector<double> read_point_rows(hid_t file, const std::string& label, int dims, int64_t& count);

/// "[3, 4]".
std::string shape_text(const std::vector<hsize_t>& shape);

}  // namespace tessera::io::detail
