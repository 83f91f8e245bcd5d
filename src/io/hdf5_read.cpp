#include "hdf5_read.hpp"

#include <cmath>

#include "tessera/core/error.hpp"

namespace tessera::io::detail {

std::string list_group(hid_t file, const std::string& group) {
  if (!path_exists(file, group)) return "no " + group + " group";
  H5Handle g = group_handle(H5Gopen2(file, group.c_str(), H5P_DEFAULT));
  if (!g.valid()) return group + " is not a group";
  std::string names;
  H5Literate(
      g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
      [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
        auto* out = static_cast<std::string*>(data);
        *out += (out->empty() ? "" : ", ") + std::string(name);
        return 0;
      },
      &names);
  return names.empty() ? group + " is empty" : group + " has " + names;
}

std::vector<double> read_doubles(hid_t file, const std::string& label, const std::string& dataset,
                                 std::vector<hsize_t>& shape) {
  H5Handle d = dataset_handle(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT));
  TESSERA_CHECK(d.valid(), label << ": " << dataset << " is not a dataset");
  H5Handle type = type_handle(H5Dget_type(d.get()));
  const H5T_class_t type_class = H5Tget_class(type.get());
  TESSERA_CHECK(type_class == H5T_FLOAT || type_class == H5T_INTEGER,
                label << ": " << dataset << " is not numeric");
  H5Handle space = space_handle(H5Dget_space(d.get()));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  TESSERA_CHECK(rank >= 0, label << ": cannot read the shape of " << dataset);
  shape.assign(static_cast<std::size_t>(rank), 0);
  H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr);
  hsize_t count = 1;
  for (hsize_t n : shape) count *= n;
  std::vector<double> values(count);
  if (count > 0) {
    TESSERA_CHECK(
        H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
        label << ": cannot read " << dataset);
  }
  return values;
}

std::string shape_text(const std::vector<hsize_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::vector<double> read_point_rows(hid_t file, const std::string& label, int dims,
                                    int64_t& count) {
  TESSERA_CHECK(path_exists(file, "/points"), label << ": missing dataset /points [n, " << dims
                                                    << "] (the file has " << list_group(file, "/")
                                                    << ")");
  std::vector<hsize_t> shape;
  auto points = read_doubles(file, label, "/points", shape);
  TESSERA_CHECK(shape.size() == 2 && shape[1] == static_cast<hsize_t>(dims) && shape[0] > 0,
                label << ": /points has shape " << shape_text(shape) << ", expected [n, " << dims
                      << "] with n > 0 (one column per input: the coordinates, then time)");
  for (std::size_t i = 0; i < points.size(); ++i)
    TESSERA_CHECK(std::isfinite(points[i]), label << ": /points row "
                                                  << i / static_cast<std::size_t>(dims)
                                                  << " is not finite");
  count = static_cast<int64_t>(shape[0]);
  return points;
}

}  // namespace tessera::io::detail
