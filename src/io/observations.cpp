#include "tessera/io/observations.hpp"

#include <cmath>
#include <filesystem>

#include "hdf5_handle.hpp"
#include "hdf5_read.hpp"
#include "tessera/core/error.hpp"

namespace tessera::io {

Observations read_observations(const std::string& path, int dims,
                               const std::vector<std::string>& fields, const std::string& key) {
  const std::string label = key + ": data file '" + path + "'";
  TESSERA_CHECK(std::filesystem::is_regular_file(path),
                label << " does not exist (relative paths resolve against the case file's folder; "
                         "tools/make_observations.py makes one)");
  detail::QuietHdf5Errors quiet;
  detail::H5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  TESSERA_CHECK(file.valid(), label << " is not a readable HDF5 file");
  Observations obs;
  obs.points = detail::read_point_rows(file.get(), label, dims, obs.count);
  obs.dims = dims;
  obs.values.assign(static_cast<std::size_t>(obs.count) * fields.size(), 0.0);
  std::vector<hsize_t> shape;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::string dataset = "/values/" + fields[f];
    TESSERA_CHECK(detail::path_exists(file.get(), dataset),
                  label << ": missing dataset " << dataset << " ("
                        << detail::list_group(file.get(), "/values") << ")");
    const auto column = detail::read_doubles(file.get(), label, dataset, shape);
    TESSERA_CHECK(shape.size() == 1 && static_cast<int64_t>(shape[0]) == obs.count,
                  label << ": " << dataset << " has shape " << detail::shape_text(shape)
                        << ", expected [" << obs.count << "] (one value per row of /points)");
    for (int64_t i = 0; i < obs.count; ++i)
      obs.values[static_cast<std::size_t>(i) * fields.size() + f] =
          column[static_cast<std::size_t>(i)];
  }
  for (std::size_t i = 0; i < obs.values.size(); ++i)
    TESSERA_CHECK(std::isfinite(obs.values[i]), label << ": /values/" << fields[i % fields.size()]
                                                      << " row " << i / fields.size()
                                                      << " is not finite");
  return obs;
}

}  // namespace tessera::io
