#include "tessera/io/data_table.hpp"

#include <cmath>
#include <filesystem>

#include "hdf5_handle.hpp"
#include "hdf5_read.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {

DataTable read_data_table(const std::string& path, const std::string& dataset,
                          const std::vector<std::string>& coordinates, const std::string& key) {
  const std::string label = key + ": data file '" + path + "'";
  TESSERA_CHECK(std::filesystem::is_regular_file(path),
                label << " does not exist (relative paths resolve against the case file's folder)");
  detail::QuietHdf5Errors quiet;
  detail::H5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  TESSERA_CHECK(file.valid(), label << " is not a readable HDF5 file");

  DataTable table;
  for (const auto& name : coordinates) {
    const std::string axis = "/grid/" + name;
    if (!detail::path_exists(file.get(), axis)) continue;
    std::vector<hsize_t> shape;
    table.grid.push_back(detail::read_doubles(file.get(), label, axis, shape));
    TESSERA_CHECK(shape.size() == 1 && shape[0] >= 2,
                  label << ": " << axis << " should be a 1-D axis of at least 2 values, has shape "
                        << detail::shape_text(shape));
    for (const double value : table.grid.back())
      TESSERA_CHECK(std::isfinite(value), label << ": " << axis << " holds a non-finite value");
    table.axes.push_back(name);
  }
  TESSERA_CHECK(!table.axes.empty(), label << ": no /grid/<coordinate> axis of this case's "
                                              "coordinates ("
                                           << detail::list_group(file.get(), "/grid") << ")");
  TESSERA_CHECK(detail::path_exists(file.get(), dataset), label << ": missing dataset " << dataset
                                                                << " (set \"dataset\" in " << key
                                                                << " to the values' path)");
  std::vector<hsize_t> expected;
  for (auto axis = table.grid.rbegin(); axis != table.grid.rend(); ++axis)
    expected.push_back(static_cast<hsize_t>(axis->size()));
  std::vector<hsize_t> shape;
  table.values = detail::read_doubles(file.get(), label, dataset, shape);
  TESSERA_CHECK(shape == expected, label << ": " << dataset << " has shape "
                                         << detail::shape_text(shape) << ", expected "
                                         << detail::shape_text(expected)
                                         << " (the /grid axes, last coordinate first)");
  for (const double value : table.values)
    TESSERA_CHECK(std::isfinite(value), label << ": " << dataset << " holds a non-finite value");
  return table;
}

}  // namespace tessera::io
