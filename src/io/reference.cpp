#include "tessera/io/reference.hpp"

#include <filesystem>

#include "hdf5_handle.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {

using detail::H5Handle;

namespace {

/// Names of the links in `group` ("/grid"), for error messages; "nothing" when absent.
std::string list_group(hid_t file, const std::string& group) {
  if (!detail::path_exists(file, group)) return "no " + group + " group";
  H5Handle g = detail::group_handle(H5Gopen2(file, group.c_str(), H5P_DEFAULT));
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

/// Reads a whole numeric dataset as float64 and returns its shape.
std::vector<double> read_doubles(hid_t file, const std::string& path, const std::string& dataset,
                                 std::vector<hsize_t>& shape) {
  H5Handle d = detail::dataset_handle(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT));
  TESSERA_CHECK(d.valid(), "reference file '" << path << "': " << dataset << " is not a dataset");
  H5Handle type = detail::type_handle(H5Dget_type(d.get()));
  const H5T_class_t type_class = H5Tget_class(type.get());
  TESSERA_CHECK(type_class == H5T_FLOAT || type_class == H5T_INTEGER,
                "reference file '" << path << "': " << dataset << " is not numeric");
  H5Handle space = detail::space_handle(H5Dget_space(d.get()));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  TESSERA_CHECK(rank >= 0, "reference file '" << path << "': cannot read the shape of " << dataset);
  shape.assign(static_cast<std::size_t>(rank), 0);
  H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr);
  hsize_t count = 1;
  for (hsize_t n : shape) count *= n;
  std::vector<double> values(count);
  if (count > 0) {
    TESSERA_CHECK(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
                  "reference file '" << path << "': cannot read " << dataset);
  }
  return values;
}

std::string shape_text(const std::vector<hsize_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

Reference read_reference(const std::string& path, const std::vector<std::string>& coordinates,
                         bool has_time, const std::vector<std::string>& fields) {
  TESSERA_CHECK(!coordinates.empty(), "reference file '" << path << "': no coordinates requested");
  TESSERA_CHECK(std::filesystem::is_regular_file(path),
                "reference file '" << path << "' does not exist (relative paths resolve against the case file's folder)");
  detail::QuietHdf5Errors quiet;
  H5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  TESSERA_CHECK(file.valid(), "reference file '" << path << "' is not a readable HDF5 file");

  Reference ref;
  ref.layout.names = coordinates;
  ref.layout.has_time = has_time;
  for (const auto& name : coordinates) {
    const std::string dataset = "/grid/" + name;
    TESSERA_CHECK(detail::path_exists(file.get(), dataset),
                  "reference file '" << path << "': missing dataset " << dataset << " ("
                                     << list_group(file.get(), "/grid") << ")");
    std::vector<hsize_t> shape;
    ref.layout.axes.push_back(read_doubles(file.get(), path, dataset, shape));
    TESSERA_CHECK(shape.size() == 1 && shape[0] > 0,
                  "reference file '" << path << "': " << dataset << " should be a non-empty 1-D axis, has shape "
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
    ref.fields[field] = read_doubles(file.get(), path, dataset, shape);
    TESSERA_CHECK(shape == expected, "reference file '" << path << "': " << dataset << " has shape "
                                                         << shape_text(shape) << ", expected "
                                                         << shape_text(expected)
                                                         << " (the /grid axes, last coordinate first)");
  }
  return ref;
}

}  // namespace tessera::io
