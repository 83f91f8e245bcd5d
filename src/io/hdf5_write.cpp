#include "hdf5_write.hpp"

#include <algorithm>
#include <limits>

#include "tessera/core/error.hpp"
#include "tessera/io/write_error.hpp"

namespace tessera::io::detail {

namespace {

/// "HDF5 failed to <what> in <path>: <HDF5's own reason>". Called right after the failed call,
/// while HDF5's error stack still holds it.
[[noreturn]] void fail(const std::string& what, const std::string& path) {
  const std::string reason = hdf5_failure_reason();
  throw WriteError("HDF5 failed to " + what + " in " + path +
                   (reason.empty() ? "" : ": " + reason));
}

void check(herr_t status, const std::string& what, const std::string& path) {
  if (status < 0) fail(what, path);
}

H5Handle checked(H5Handle handle, const std::string& what, const std::string& path) {
  if (!handle.valid()) fail(what, path);
  return handle;
}

std::vector<hsize_t> to_hsize(const std::vector<int64_t>& v) {
  return std::vector<hsize_t>(v.begin(), v.end());
}

}  // namespace

bool is_reserved_attribute(const std::string& name) {
  return name == "case_name" || name == "coordinates" || name == "time_coordinate";
}

ParallelGridFile::ParallelGridFile(MPI_Comm comm, const std::string& path, const GridLayout& layout)
    : path_(path), layout_(layout) {
  MPI_Comm_rank(comm, &rank_);
  // Everything that can fail alone comes first: once the file exists, only close() may end it.
  collective_ = checked(plist_handle(H5Pcreate(H5P_DATASET_XFER)), "create a transfer list", path_);
  check(H5Pset_dxpl_mpio(collective_.get(), H5FD_MPIO_COLLECTIVE), "request collective I/O", path_);
  H5Handle fapl = checked(plist_handle(H5Pcreate(H5P_FILE_ACCESS)), "create an access list", path_);
  check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), "select the MPI-IO driver", path_);
  file_ = checked(file_handle(H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())),
                  "create the file (is the directory writable?)", path_);
}

void ParallelGridFile::create_groups() {
  // A mesh without time has no axis at all: no empty /grid group then.
  std::vector<const char*> groups = {"/fields"};
  if (!layout_.axes.empty()) groups.push_back("/grid");
  if (layout_.mesh) groups.push_back("/mesh");
  for (const char* group : groups) {
    checked(group_handle(H5Gcreate2(file_.get(), group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
            std::string("create group ") + group, path_);
  }
}

void ParallelGridFile::write_root_only(const std::string& name, hid_t dataset, hid_t mem_type,
                                       const void* data, hsize_t count) {
  // Collective transfer in which only rank 0 selects anything: the others still take part.
  H5Handle file_space = space_handle(H5Dget_space(dataset));
  const hsize_t mem_count = std::max<hsize_t>(count, 1);
  H5Handle mem_space = space_handle(H5Screate_simple(1, &mem_count, nullptr));
  if (rank_ != 0) {
    check(H5Sselect_none(file_space.get()), "select nothing", path_);
    check(H5Sselect_none(mem_space.get()), "select nothing", path_);
  }
  check(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), collective_.get(), data),
        "write " + name, path_);
}

void ParallelGridFile::write_axes() {
  // With a mesh, axes holds only the time axis, which goes with the last name.
  const std::size_t first_name = layout_.names.size() - layout_.axes.size();
  for (std::size_t a = 0; a < layout_.axes.size(); ++a) {
    const hsize_t n = layout_.axes[a].size();
    H5Handle space = space_handle(H5Screate_simple(1, &n, nullptr));
    const std::string name = "/grid/" + layout_.names[first_name + a];
    H5Handle dataset =
        checked(dataset_handle(H5Dcreate2(file_.get(), name.c_str(), H5T_IEEE_F64LE, space.get(),
                                          H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                "create " + name, path_);
    write_root_only(name, dataset.get(), H5T_NATIVE_DOUBLE, layout_.axes[a].data(), n);
  }
}

void ParallelGridFile::write_matrix_root_only(const std::string& name, hid_t file_type,
                                              hid_t mem_type, const void* data, hsize_t rows,
                                              hsize_t columns) {
  const hsize_t shape[2] = {rows, columns};
  H5Handle space = space_handle(H5Screate_simple(2, shape, nullptr));
  H5Handle dataset =
      checked(dataset_handle(H5Dcreate2(file_.get(), name.c_str(), file_type, space.get(),
                                        H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
              "create " + name, path_);
  write_root_only(name, dataset.get(), mem_type, data, rows * columns);
}

void ParallelGridFile::write_mesh() {
  TESSERA_CHECK(layout_.mesh.has_value(), "grid output: write_mesh without a mesh in " << path_);
  const MeshPoints& mesh = *layout_.mesh;
  write_matrix_root_only("/mesh/points", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, mesh.points.data(),
                         static_cast<hsize_t>(mesh.point_count()), static_cast<hsize_t>(mesh.dims));
  write_matrix_root_only("/mesh/cells", H5T_STD_I64LE, H5T_NATIVE_INT64, mesh.cells.data(),
                         static_cast<hsize_t>(mesh.cell_count()),
                         static_cast<hsize_t>(mesh.dims + 1));
}

void ParallelGridFile::write_points(const std::string& path, hid_t type, const void* fill,
                                    const std::vector<int64_t>& indices, const void* values) {
  const std::vector<hsize_t> shape = to_hsize(layout_.shape_c_order());
  const int rank = static_cast<int>(shape.size());
  H5Handle file_space = space_handle(H5Screate_simple(rank, shape.data(), nullptr));
  H5Handle dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE));
  // Points no rank owns (outside an irregular domain) keep the fill value: NaN or -1.
  check(H5Pset_fill_value(dcpl.get(), type, fill), "set the fill value of " + path, path_);
  check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_ALLOC), "set the fill time of " + path, path_);
  const hid_t file_type = H5Tequal(type, H5T_NATIVE_DOUBLE) > 0 ? H5T_IEEE_F64LE : H5T_STD_I32LE;
  H5Handle dataset =
      checked(dataset_handle(H5Dcreate2(file_.get(), path.c_str(), file_type, file_space.get(),
                                        H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)),
              "create " + path, path_);

  const hsize_t n = indices.size();
  const hsize_t mem_count = std::max<hsize_t>(n, 1);
  H5Handle mem_space = space_handle(H5Screate_simple(1, &mem_count, nullptr));
  if (n == 0) {
    check(H5Sselect_none(file_space.get()), "select nothing", path_);
    check(H5Sselect_none(mem_space.get()), "select nothing", path_);
  } else {
    // Flat index -> per-dimension coordinates (C order: last dimension fastest = first axis).
    std::vector<hsize_t> coords(n * rank);
    for (hsize_t i = 0; i < n; ++i) {
      hsize_t rest = static_cast<hsize_t>(indices[i]);
      for (int d = rank - 1; d >= 0; --d) {
        coords[i * rank + d] = rest % shape[d];
        rest /= shape[d];
      }
    }
    check(H5Sselect_elements(file_space.get(), H5S_SELECT_SET, n, coords.data()),
          "select the points of " + path, path_);
  }
  const double dummy = 0;
  check(H5Dwrite(dataset.get(), type, mem_space.get(), file_space.get(), collective_.get(),
                 n == 0 ? static_cast<const void*>(&dummy) : values),
        "write " + path, path_);
}

void ParallelGridFile::write_field(const std::string& name, const std::vector<int64_t>& indices,
                                   const std::vector<double>& values) {
  const double fill = std::numeric_limits<double>::quiet_NaN();
  write_points("/fields/" + name, H5T_NATIVE_DOUBLE, &fill, indices, values.data());
}

void ParallelGridFile::write_subdomain(const std::vector<int64_t>& indices,
                                       const std::vector<int32_t>& values) {
  const int32_t fill = -1;
  write_points("/fields/subdomain", H5T_NATIVE_INT32, &fill, indices, values.data());
}

void ParallelGridFile::write_parameters(const std::map<std::string, double>& parameters) {
  if (parameters.empty()) return;
  H5Handle group = checked(
      group_handle(H5Gcreate2(file_.get(), "/parameters", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
      "create group /parameters", path_);
  for (const auto& [name, value] : parameters) {
    TESSERA_CHECK(!name.empty() && name.find('/') == std::string::npos,
                  "grid output: invalid parameter name '" << name << "'");
    H5Handle space = space_handle(H5Screate(H5S_SCALAR));
    H5Handle dataset =
        checked(dataset_handle(H5Dcreate2(group.get(), name.c_str(), H5T_IEEE_F64LE, space.get(),
                                          H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                "create /parameters/" + name, path_);
    H5Handle file_space = space_handle(H5Dget_space(dataset.get()));
    H5Handle mem_space = space_handle(H5Screate(H5S_SCALAR));
    if (rank_ != 0) {
      check(H5Sselect_none(file_space.get()), "select nothing", path_);
      check(H5Sselect_none(mem_space.get()), "select nothing", path_);
    }
    check(H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, mem_space.get(), file_space.get(),
                   collective_.get(), &value),
          "write /parameters/" + name, path_);
  }
}

namespace {

// Attributes are metadata: in parallel HDF5 every rank writes the same value.
void double_attribute(hid_t object, const std::string& name, double value,
                      const std::string& path) {
  H5Handle space = space_handle(H5Screate(H5S_SCALAR));
  H5Handle attr = checked(attribute_handle(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE,
                                                      space.get(), H5P_DEFAULT, H5P_DEFAULT)),
                          "create attribute " + name, path);
  check(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value), "write attribute " + name, path);
}

void string_attribute(hid_t object, const std::string& name, const std::string& value,
                      const std::string& path) {
  // Fixed-length UTF-8: safe in parallel HDF5 (no global-heap writes), read by h5py and h5dump.
  H5Handle type = type_handle(H5Tcopy(H5T_C_S1));
  check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)), "size a string type",
        path);
  check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "pad a string type", path);
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "set a string encoding", path);
  H5Handle space = space_handle(H5Screate(H5S_SCALAR));
  H5Handle attr = checked(attribute_handle(H5Acreate2(object, name.c_str(), type.get(), space.get(),
                                                      H5P_DEFAULT, H5P_DEFAULT)),
                          "create attribute " + name, path);
  std::string buffer = value;
  buffer.resize(std::max<std::size_t>(value.size(), 1), '\0');
  check(H5Awrite(attr.get(), type.get(), buffer.data()), "write attribute " + name, path);
}

}  // namespace

void ParallelGridFile::write_root_attributes(const GridFileInfo& info) {
  H5Handle root = checked(group_handle(H5Gopen2(file_.get(), "/", H5P_DEFAULT)), "open /", path_);
  string_attribute(root.get(), "case_name", info.case_name, path_);
  std::string coordinates;
  for (const auto& name : layout_.names) coordinates += (coordinates.empty() ? "" : ",") + name;
  string_attribute(root.get(), "coordinates", coordinates, path_);
  if (layout_.has_time)
    string_attribute(root.get(), "time_coordinate", layout_.names.back(), path_);
  for (const auto& [name, value] : info.attributes_double)
    double_attribute(root.get(), name, value, path_);
  for (const auto& [name, value] : info.attributes_string)
    string_attribute(root.get(), name, value, path_);
}

void ParallelGridFile::write_line_helpers() {
  const std::vector<double>& x = layout_.axes.front();
  const hsize_t n = x.size();
  checked(group_handle(H5Gcreate2(file_.get(), "/xdmf", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
          "create group /xdmf", path_);
  std::vector<double> points(n * 3, 0.0);
  for (hsize_t i = 0; i < n; ++i) points[3 * i] = x[i];
  write_matrix_root_only("/xdmf/points", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, points.data(), n, 3);

  const hsize_t segments = std::max<hsize_t>(n - 1, 1);
  std::vector<int32_t> connectivity(segments * 2, 0);
  for (hsize_t s = 0; s + 1 < n; ++s) {
    connectivity[2 * s] = static_cast<int32_t>(s);
    connectivity[2 * s + 1] = static_cast<int32_t>(s + 1);
  }
  write_matrix_root_only("/xdmf/segments", H5T_STD_I32LE, H5T_NATIVE_INT32, connectivity.data(),
                         segments, 2);
}

void ParallelGridFile::flush() {
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "write the metadata (flush)", path_);
}

void ParallelGridFile::close() {
  collective_.reset();
  if (!file_.close()) fail("close (flush)", path_);
}

StepViewFile::StepViewFile(const std::string& path, const GridLayout& layout)
    : path_(path), layout_(layout) {
  file_ = checked(file_handle(H5Fopen(path_.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)),
                  "open the file for its time steps", path_);
}

void StepViewFile::write(const std::vector<std::string>& fields) {
  const std::vector<hsize_t> shape = to_hsize(layout_.shape_c_order());
  const int rank = static_cast<int>(shape.size());
  const std::vector<hsize_t> step_shape(shape.begin() + 1, shape.end());
  H5Handle steps = checked(
      group_handle(H5Gcreate2(file_.get(), "/steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
      "create group /steps", path_);
  H5Handle view_space = space_handle(H5Screate_simple(rank - 1, step_shape.data(), nullptr));
  for (hsize_t k = 0; k < shape[0]; ++k) {
    const std::string group_name = std::to_string(k);
    H5Handle group = checked(group_handle(H5Gcreate2(steps.get(), group_name.c_str(), H5P_DEFAULT,
                                                     H5P_DEFAULT, H5P_DEFAULT)),
                             "create group /steps/" + group_name, path_);
    std::vector<hsize_t> start(rank, 0), count(shape);
    start[0] = k;
    count[0] = 1;
    H5Handle source_space = space_handle(H5Screate_simple(rank, shape.data(), nullptr));
    check(H5Sselect_hyperslab(source_space.get(), H5S_SELECT_SET, start.data(), nullptr,
                              count.data(), nullptr),
          "select time slice " + group_name, path_);
    for (const auto& field : fields) {
      const bool is_int = field == "subdomain";
      const double fill_double = std::numeric_limits<double>::quiet_NaN();
      const int32_t fill_int = -1;
      H5Handle dcpl = plist_handle(H5Pcreate(H5P_DATASET_CREATE));
      check(H5Pset_fill_value(dcpl.get(), is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE,
                              is_int ? static_cast<const void*>(&fill_int) : &fill_double),
            "set a fill value", path_);
      // "." = this same file, so the views survive the rename from the temporary name.
      const std::string source = "/fields/" + field;
      check(H5Pset_virtual(dcpl.get(), view_space.get(), ".", source.c_str(), source_space.get()),
            "map /steps/" + group_name + "/" + field, path_);
      checked(dataset_handle(H5Dcreate2(group.get(), field.c_str(),
                                        is_int ? H5T_STD_I32LE : H5T_IEEE_F64LE, view_space.get(),
                                        H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)),
              "create /steps/" + group_name + "/" + field, path_);
    }
  }
}

void StepViewFile::flush() {
  check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "write the time steps (flush)", path_);
}

void StepViewFile::close() {
  if (!file_.close()) fail("close (flush)", path_);
}

}  // namespace tessera::io::detail
