#include "tessera/io/reference.hpp"

#include <algorithm>
#include <filesystem>

#include "hdf5_handle.hpp"
#include "hdf5_read.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/observations.hpp"

namespace tessera::io {

using detail::H5Handle;
using detail::list_group;
using detail::shape_text;

int64_t Reference::count() const {
  return scattered() ? static_cast<int64_t>(points.size()) /
                           std::max<int64_t>(1, static_cast<int64_t>(layout.names.size()))
                     : layout.size();
}

Reference read_reference(const std::string& path, const std::vector<std::string>& coordinates,
                         bool has_time, const std::vector<std::string>& fields) {
  TESSERA_CHECK(!coordinates.empty(), "reference file '" << path << "': no coordinates requested");
  TESSERA_CHECK(std::filesystem::is_regular_file(path),
                "reference file '"
                    << path
                    << "' does not exist (relative paths resolve against the case file's folder)");
  detail::QuietHdf5Errors quiet;
  H5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  TESSERA_CHECK(file.valid(), "reference file '" << path << "' is not a readable HDF5 file");

  Reference ref;
  if (detail::path_exists(file.get(), "/points") && !detail::path_exists(file.get(), "/grid")) {
    file.close();
    const auto scattered = read_observations(path, static_cast<int>(coordinates.size()), fields,
                                             "scattered reference");
    ref.layout.names = coordinates;
    ref.layout.has_time = has_time;
    ref.points = scattered.points;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      auto& column = ref.fields[fields[f]];
      for (int64_t i = 0; i < scattered.count; ++i)
        column.push_back(scattered.values[static_cast<std::size_t>(i) * fields.size() + f]);
    }
    return ref;
  }
  ref.layout.names = coordinates;
  ref.layout.has_time = has_time;
  for (const auto& name : coordinates) {
    const std::string dataset = "/grid/" + name;
    TESSERA_CHECK(detail::path_exists(file.get(), dataset),
                  "reference file '" << path << "': missing dataset " << dataset << " ("
                                     << list_group(file.get(), "/grid") << ")");
    std::vector<hsize_t> shape;
    ref.layout.axes.push_back(
        detail::read_doubles(file.get(), "reference file '" + path + "'", dataset, shape));
    TESSERA_CHECK(shape.size() == 1 && shape[0] > 0,
                  "reference file '" << path << "': " << dataset
                                     << " should be a non-empty 1-D axis, has shape "
                                     << shape_text(shape));
  }
  std::vector<hsize_t> expected;
  for (int64_t n : ref.layout.shape_c_order()) expected.push_back(static_cast<hsize_t>(n));
  for (const auto& field : fields) {
    const std::string dataset = "/fields/" + field;
    TESSERA_CHECK(detail::path_exists(file.get(), dataset),
                  "reference file '" << path << "': missing dataset " << dataset << " ("
                                     << list_group(file.get(), "/fields") << ")");
    std::vector<hsize_t> shape;
    ref.fields[field] =
        detail::read_doubles(file.get(), "reference file '" + path + "'", dataset, shape);
    TESSERA_CHECK(shape == expected,
                  "reference file '" << path << "': " << dataset << " has shape "
                                     << shape_text(shape) << ", expected " << shape_text(expected)
                                     << " (the /grid axes, last coordinate first)");
  }
  return ref;
}

}  // namespace tessera::io
