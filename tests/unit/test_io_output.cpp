// Grid output (parallel HDF5 + XDMF), reference reader and output-directory checks, on one rank.
// The file is read back with the HDF5 C API, independently of the writer's own code.
#include <doctest/doctest.h>
#include <mpi.h>
#include <unistd.h>

#if __has_include(<hdf5.h>)
#include <hdf5.h>
#elif __has_include( \
    <hdf5/mpich/hdf5.h>)  // Debian's libhdf5-mpich-dev (tessera_io keeps its HDF5 include dir private)
#include <hdf5/mpich/hdf5.h>
#else
#error "hdf5.h not found"
#endif

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/grid_output.hpp"
#include "tessera/io/reference.hpp"
#include "tessera/io/xdmf.hpp"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

// tessera_doctest_main owns main(); MPI must be up before any parallel HDF5 call.
struct MpiForThisTest {
  MpiForThisTest() { MPI_Init(nullptr, nullptr); }
  ~MpiForThisTest() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
} mpi_for_this_test;

int world_rank() { return parallel::Communicator::world().rank(); }

/// One folder shared by all ranks (named after rank 0's pid), removed by rank 0 at the end.
/// The tests also run by hand under `mpiexec.mpich -n 2` to exercise the collective paths.
struct TempDir {
  fs::path path;
  TempDir() {
    long pid = ::getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    path = fs::temp_directory_path() / ("tessera_test_io_output_" + std::to_string(pid));
    fs::create_directories(path);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~TempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    std::error_code ec;
    if (world_rank() == 0) fs::remove_all(path, ec);
  }
};

struct Dataset {
  std::vector<hsize_t> shape;
  bool is_f64 = false, is_i32 = false, is_i64 = false;
  std::vector<double> values;  // converted to double for comparison
};

Dataset read_dataset(const fs::path& file_path, const std::string& name) {
  hid_t file = H5Fopen(file_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  Dataset out;
  REQUIRE_MESSAGE(H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0, name);
  hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  REQUIRE(d >= 0);
  hid_t type = H5Dget_type(d);
  out.is_f64 = H5Tequal(type, H5T_IEEE_F64LE) > 0;
  out.is_i32 = H5Tequal(type, H5T_STD_I32LE) > 0;
  out.is_i64 = H5Tequal(type, H5T_STD_I64LE) > 0;
  hid_t space = H5Dget_space(d);
  const int rank = H5Sget_simple_extent_ndims(space);
  out.shape.resize(rank);
  H5Sget_simple_extent_dims(space, out.shape.data(), nullptr);
  hsize_t n = 1;
  for (hsize_t s : out.shape) n *= s;
  out.values.resize(n);
  REQUIRE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) >= 0);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(d);
  H5Fclose(file);
  return out;
}

bool has_link(const fs::path& file_path, const std::string& name) {
  hid_t file = H5Fopen(file_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const bool found = H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
  H5Fclose(file);
  return found;
}

double double_attribute(const fs::path& file_path, const std::string& name) {
  hid_t file = H5Fopen(file_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t attr = H5Aopen_by_name(file, "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  double value = 0;
  H5Aread(attr, H5T_NATIVE_DOUBLE, &value);
  H5Aclose(attr);
  H5Fclose(file);
  return value;
}

std::string string_attribute(const fs::path& file_path, const std::string& name) {
  hid_t file = H5Fopen(file_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t attr = H5Aopen_by_name(file, "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  hid_t type = H5Aget_type(attr);
  REQUIRE(H5Tget_class(type) == H5T_STRING);
  std::string value(H5Tget_size(type), '\0');
  H5Aread(attr, type, value.data());
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  H5Tclose(type);
  H5Aclose(attr);
  H5Fclose(file);
  return value;
}

/// Minimal well-formedness check: every tag closes in order, attributes are quoted.
bool well_formed_xml(const std::string& text, std::string& why) {
  std::vector<std::string> stack;
  std::size_t pos = 0;
  while ((pos = text.find('<', pos)) != std::string::npos) {
    const std::size_t end = text.find('>', pos);
    if (end == std::string::npos) return why = "unterminated tag", false;
    std::string tag = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty()) return why = "empty tag", false;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0)
      return why = "unbalanced quotes in <" + tag + ">", false;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return why = "unexpected </" + name + ">", false;
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty()) return why = "unclosed <" + stack.back() + ">", false;
  return true;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
    ++n;
  return n;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

io::GridLayout layout_2d() {
  io::GridLayout layout;
  layout.names = {"x", "y"};
  layout.axes = {{0.0, 0.25, 0.5, 1.0}, {-1.0, 0.0, 2.0}};
  return layout;
}

io::GridLayout layout_1d_time() {
  io::GridLayout layout;
  layout.names = {"x", "t"};
  layout.axes = {{-1.0, -0.5, 0.0, 0.5, 1.0}, {0.0, 0.1, 0.25}};
  layout.has_time = true;
  return layout;
}

/// The unit square as two triangles: points 0 (0,0), 1 (1,0), 2 (1,1), 3 (0,1).
io::GridLayout layout_triangles() {
  io::GridLayout layout;
  layout.names = {"x", "y"};
  io::MeshPoints mesh;
  mesh.dims = 2;
  mesh.points = {0, 0, 1, 0, 1, 1, 0, 1};
  mesh.cells = {0, 1, 2, 0, 2, 3};
  layout.mesh = mesh;
  return layout;
}

/// Two tetrahedra sharing the face (1, 2, 3), at two time values.
io::GridLayout layout_tetrahedra_time() {
  io::GridLayout layout;
  layout.names = {"x", "y", "z", "t"};
  layout.axes = {{0.0, 0.5}};
  layout.has_time = true;
  io::MeshPoints mesh;
  mesh.dims = 3;
  mesh.points = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  mesh.cells = {0, 1, 2, 3, 1, 2, 3, 4};
  layout.mesh = mesh;
  return layout;
}

/// Fills every point except `skip`, in reverse order (the writer must not rely on order);
/// with several ranks, rank r takes the points i with i % size == r.
io::GridContribution contribution_for(const io::GridLayout& layout,
                                      const std::vector<int64_t>& skip) {
  const auto comm = parallel::Communicator::world();
  io::GridContribution c;
  c.fields["u"];
  c.fields["u_exact"];
  for (int64_t i = layout.size() - 1; i >= 0; --i) {
    if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
    if (i % comm.size() != comm.rank()) continue;
    c.indices.push_back(i);
    c.fields["u"].push_back(1000.0 + i);
    c.fields["u_exact"].push_back(-0.5 * i);
    c.subdomain.push_back(static_cast<int32_t>(i % 3));
  }
  return c;
}

}  // namespace

TEST_CASE("grid layout: size, C-order shape, flat index with the first coordinate fastest") {
  const auto layout = layout_1d_time();
  CHECK(layout.size() == 15);
  CHECK(layout.shape_c_order() == std::vector<int64_t>{3, 5});
  CHECK(layout.spatial_dims() == 1);
  CHECK(layout.flat_index({0, 0}) == 0);
  CHECK(layout.flat_index({1, 0}) == 1);
  CHECK(layout.flat_index({4, 2}) == 14);
  CHECK_THROWS_AS(layout.flat_index({5, 0}), Error);
  io::GridLayout bad = layout;
  bad.axes[1].clear();
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("axis 't' has no points"), Error);
}

TEST_CASE(
    "2-D grid output: datasets, dtypes, C-order values, NaN and -1 where no rank wrote, "
    "attributes") {
  TempDir tmp;
  const auto layout = layout_2d();
  const std::vector<int64_t> skip = {5, 7};
  io::GridFileInfo info;
  info.case_name = "poisson2d";
  info.attributes_double = {{"iterations", 4500}, {"wall_seconds", 12.5}, {"rel_l2_u", 1.5e-3}};
  info.attributes_string = {{"tessera_version", "0.1.0"}};
  info.parameters = {{"nu", 0.0031}, {"k", 2.0}};
  io::write_grid_output(parallel::Communicator::world(), tmp.path.string(), "poisson2d", layout,
                        contribution_for(layout, skip), info);
  const fs::path h5 = tmp.path / "poisson2d.h5";
  REQUIRE(fs::exists(h5));
  REQUIRE(fs::exists(tmp.path / "poisson2d.xmf"));
  CHECK_FALSE(fs::exists(tmp.path / "poisson2d.h5.partial"));
  CHECK_FALSE(fs::exists(tmp.path / "poisson2d.xmf.partial"));

  const auto x = read_dataset(h5, "/grid/x");
  CHECK(x.is_f64);
  CHECK(x.shape == std::vector<hsize_t>{4});
  CHECK(x.values == layout.axes[0]);
  const auto y = read_dataset(h5, "/grid/y");
  CHECK(y.values == layout.axes[1]);

  const auto u = read_dataset(h5, "/fields/u");
  const auto u_exact = read_dataset(h5, "/fields/u_exact");
  const auto sub = read_dataset(h5, "/fields/subdomain");
  CHECK(u.is_f64);
  CHECK(sub.is_i32);
  CHECK(u.shape == std::vector<hsize_t>{3, 4});  // [ny, nx]
  CHECK(sub.shape == std::vector<hsize_t>{3, 4});
  for (int64_t j = 0; j < 3; ++j) {
    for (int64_t i = 0; i < 4; ++i) {
      const int64_t flat = layout.flat_index({i, j});
      CHECK(flat == j * 4 + i);
      const double value = u.values[j * 4 + i];  // C order: row j, column i
      if (std::find(skip.begin(), skip.end(), flat) != skip.end()) {
        CHECK(std::isnan(value));
        CHECK(std::isnan(u_exact.values[flat]));
        CHECK(sub.values[flat] == -1);
      } else {
        CHECK(value == 1000.0 + flat);
        CHECK(u_exact.values[flat] == -0.5 * flat);
        CHECK(sub.values[flat] == flat % 3);
      }
    }
  }
  CHECK(string_attribute(h5, "case_name") == "poisson2d");
  CHECK(string_attribute(h5, "coordinates") == "x,y");
  CHECK(string_attribute(h5, "tessera_version") == "0.1.0");
  CHECK(double_attribute(h5, "iterations") == 4500);
  CHECK(double_attribute(h5, "wall_seconds") == 12.5);
  CHECK(double_attribute(h5, "rel_l2_u") == 1.5e-3);
  const auto nu = read_dataset(h5, "/parameters/nu");
  CHECK(nu.shape.empty());
  CHECK(nu.values == std::vector<double>{0.0031});
  CHECK(read_dataset(h5, "/parameters/k").values == std::vector<double>{2.0});
  CHECK_FALSE(has_link(h5, "/steps"));

  const std::string xmf = read_text(tmp.path / "poisson2d.xmf");
  CHECK(xmf == io::xdmf_text(layout, {"u", "u_exact"}, true, "poisson2d.h5", "poisson2d"));
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "TopologyType=\"2DRectMesh\" Dimensions=\"3 4\"") == 1);
  CHECK(count(xmf, "GeometryType=\"VXVY\"") == 1);
  // VXVY lists x then y.
  CHECK(xmf.find("poisson2d.h5:/grid/x") < xmf.find("poisson2d.h5:/grid/y"));
  CHECK(count(xmf,
              "<DataItem Dimensions=\"3 4\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">poisson2d.h5:/fields/u<") == 1);
  CHECK(
      count(xmf,
            "NumberType=\"Int\" Precision=\"4\" Format=\"HDF\">poisson2d.h5:/fields/subdomain<") ==
      1);
  CHECK(count(xmf, "<Attribute ") == 3);
  CHECK(count(xmf, "Temporal") == 0);
}

TEST_CASE(
    "space-time grid output: [nt, nx] fields, /steps virtual slices, polyline helpers, temporal "
    "XDMF") {
  TempDir tmp;
  const auto layout = layout_1d_time();
  const std::vector<int64_t> skip = {6};
  io::GridFileInfo info;
  info.case_name = "burgers";
  io::write_grid_output(parallel::Communicator::world(), tmp.path.string(), "burgers", layout,
                        contribution_for(layout, skip), info);
  const fs::path h5 = tmp.path / "burgers.h5";
  CHECK(string_attribute(h5, "time_coordinate") == "t");
  CHECK(string_attribute(h5, "coordinates") == "x,t");
  CHECK_FALSE(has_link(h5, "/parameters"));
  CHECK(read_dataset(h5, "/grid/t").values == layout.axes[1]);
  const auto u = read_dataset(h5, "/fields/u");
  CHECK(u.shape == std::vector<hsize_t>{3, 5});
  CHECK(std::isnan(u.values[6]));
  CHECK(u.values[7] == 1007.0);
  for (int k = 0; k < 3; ++k) {
    for (const std::string field : {"u", "u_exact", "subdomain"}) {
      const auto full = read_dataset(h5, "/fields/" + field);
      const auto step = read_dataset(h5, "/steps/" + std::to_string(k) + "/" + field);
      CHECK(step.shape == std::vector<hsize_t>{5});
      CHECK(step.is_i32 == (field == "subdomain"));
      for (int i = 0; i < 5; ++i) {
        const double expected = full.values[k * 5 + i];
        if (std::isnan(expected)) {
          CHECK(std::isnan(step.values[i]));
        } else {
          CHECK(step.values[i] == expected);
        }
      }
    }
  }
  const auto points = read_dataset(h5, "/xdmf/points");
  CHECK(points.shape == std::vector<hsize_t>{5, 3});
  CHECK(points.values[3 * 4] == 1.0);
  CHECK(points.values[3 * 4 + 1] == 0.0);
  const auto segments = read_dataset(h5, "/xdmf/segments");
  CHECK(segments.is_i32);
  CHECK(segments.shape == std::vector<hsize_t>{4, 2});
  CHECK(segments.values == std::vector<double>{0, 1, 1, 2, 2, 3, 3, 4});

  const std::string xmf = read_text(tmp.path / "burgers.xmf");
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "CollectionType=\"Temporal\"") == 1);
  CHECK(count(xmf, "GridType=\"Uniform\"") == 3);
  CHECK(count(xmf, "<Time Value=\"0\"/>") == 1);
  CHECK(count(xmf, "<Time Value=\"0.1\"/>") == 1);
  CHECK(count(xmf, "<Time Value=\"0.25\"/>") == 1);
  CHECK(count(xmf, "TopologyType=\"Polyline\" NodesPerElement=\"2\" NumberOfElements=\"4\"") == 3);
  CHECK(count(xmf, "<DataItem Dimensions=\"4 2\" NumberType=\"Int\"") == 3);
  CHECK(count(xmf, "<DataItem Dimensions=\"5 3\" NumberType=\"Float\"") == 3);
  CHECK(count(xmf, "burgers.h5:/steps/2/u_exact<") == 1);
  CHECK(count(xmf, "burgers.h5:/steps/1/subdomain<") == 1);
  CHECK(count(xmf, "HyperSlab") == 0);
  CHECK(count(xmf, "<DataItem Dimensions=\"5\" NumberType=\"Float\"") == 6);  // u, u_exact per step
}

TEST_CASE("xdmf text beyond 3 spatial axes is a well-formed file without a grid") {
  io::GridLayout layout;
  layout.names = {"x1", "x2", "x3", "x4", "x5"};
  layout.axes = {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 0.5, 1}};
  const std::string xmf = io::xdmf_text(layout, {"u"}, true, "p5.h5", "p5");
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "<Grid") == 0);
  CHECK(count(xmf, "A 5-D grid has no XDMF view") == 1);
  CHECK(count(xmf, "p5.h5") == 1);
}

TEST_CASE("xdmf text for 3-D space: 3DRectMesh dimensions slowest first, VXVYVZ axes x, y, z") {
  io::GridLayout layout;
  layout.names = {"x", "y", "z", "t"};
  layout.axes = {{0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {0.5, 1.0 / 3.0}};
  layout.has_time = true;
  const std::string xmf = io::xdmf_text(layout, {"u"}, false, "a&b.h5", "cube");
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "TopologyType=\"3DRectMesh\" Dimensions=\"4 3 2\"") == 2);
  CHECK(count(xmf, "GeometryType=\"VXVYVZ\"") == 2);
  CHECK(xmf.find("a&amp;b.h5:/grid/x") < xmf.find("a&amp;b.h5:/grid/y"));
  CHECK(xmf.find("a&amp;b.h5:/grid/y") < xmf.find("a&amp;b.h5:/grid/z"));
  CHECK(count(xmf, "/grid/t") == 0);
  CHECK(count(xmf, "<Time Value=\"0.33333333333333331\"/>") == 1);  // round-trips exactly
  CHECK(count(xmf,
              "<DataItem Dimensions=\"4 3 2\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">a&amp;b.h5:/steps/1/u<") == 1);
  CHECK(count(xmf, "subdomain") == 0);
}

TEST_CASE("read_reference round-trips grid output and names the file and the missing dataset") {
  TempDir tmp;
  const auto layout = layout_1d_time();
  const auto contribution = contribution_for(layout, {});
  io::write_grid_output(parallel::Communicator::world(), tmp.path.string(), "ref", layout,
                        contribution, {});
  const std::string path = (tmp.path / "ref.h5").string();

  const auto ref = io::read_reference(path, {"x", "t"}, true, {"u"});
  CHECK(ref.layout.names == layout.names);
  CHECK(ref.layout.axes == layout.axes);
  CHECK(ref.layout.has_time);
  REQUIRE(ref.fields.at("u").size() == 15);
  for (std::size_t k = 0; k < contribution.indices.size(); ++k) {
    CHECK(ref.fields.at("u")[contribution.indices[k]] == contribution.fields.at("u")[k]);
  }
  CHECK_THROWS_WITH_AS(io::read_reference(path, {"x", "t"}, true, {"v"}),
                       ("reference file '" + path +
                        "': missing dataset /fields/v (/fields has subdomain, u, u_exact)")
                           .c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(
      io::read_reference(path, {"x", "y", "t"}, true, {"u"}),
      ("reference file '" + path + "': missing dataset /grid/y (/grid has t, x)").c_str(), Error);
  CHECK_THROWS_WITH_AS(io::read_reference(path, {"t", "x"}, true, {"u"}),
                       doctest::Contains("/fields/u has shape [3, 5], expected [5, 3]"), Error);
  CHECK_THROWS_WITH_AS(io::read_reference((tmp.path / "none.h5").string(), {"x"}, false, {"u"}),
                       doctest::Contains("does not exist"), Error);
}

TEST_CASE(
    "grid output rejects a repeated index, a short field and a reserved attribute name on every "
    "rank") {
  TempDir tmp;
  const auto layout = layout_2d();
  const auto comm = parallel::Communicator::world();
  // Rank 0 errs; the others must throw too (not hang in the next collective call).
  const std::string elsewhere = "another rank failed while checking its contribution";
  auto twice = contribution_for(layout, {});
  if (comm.rank() == 0) {  // rank 0 always holds flat index 0
    twice.indices.push_back(twice.indices.back());
    for (auto& [name, values] : twice.fields) values.push_back(values.back());
    twice.subdomain.push_back(twice.subdomain.back());
  }
  CHECK_THROWS_WITH_AS(io::write_grid_output(comm, tmp.path.string(), "a", layout, twice, {}),
                       doctest::Contains(comm.rank() == 0 ? "given twice" : elsewhere.c_str()),
                       Error);
  auto short_field = contribution_for(layout, {});
  if (comm.rank() == 0) short_field.fields["u"].pop_back();
  CHECK_THROWS_WITH_AS(io::write_grid_output(comm, tmp.path.string(), "a", layout, short_field, {}),
                       doctest::Contains(comm.rank() == 0 ? "field 'u' has" : elsewhere.c_str()),
                       Error);
  io::GridFileInfo info;
  info.attributes_string["coordinates"] = "x";
  CHECK_THROWS_WITH_AS(io::write_grid_output(comm, tmp.path.string(), "a", layout,
                                             contribution_for(layout, {}), info),
                       doctest::Contains("reserved"), Error);
  auto extra_field = contribution_for(layout, {});
  if (comm.size() > 1 && comm.rank() == 1) extra_field.fields["v"] = extra_field.fields["u"];
  if (comm.size() > 1) {
    CHECK_THROWS_WITH_AS(
        io::write_grid_output(comm, tmp.path.string(), "a", layout, extra_field, {}),
        doctest::Contains("ranks disagree"), Error);
  }
  CHECK_FALSE(fs::exists(tmp.path / "a.h5"));
}

TEST_CASE("mesh layout: size, [nt, n_points] shape, flat index point fastest, time slowest") {
  const auto triangles = layout_triangles();
  CHECK(triangles.mesh->point_count() == 4);
  CHECK(triangles.mesh->cell_count() == 2);
  CHECK(triangles.size() == 4);
  CHECK(triangles.shape_c_order() == std::vector<int64_t>{4});
  CHECK(triangles.spatial_dims() == 2);
  CHECK(triangles.flat_index({3}) == 3);
  CHECK_THROWS_WITH_AS(triangles.flat_index({4}), doctest::Contains("outside the mesh of 4 points"),
                       Error);
  triangles.validate();

  const auto tetrahedra = layout_tetrahedra_time();
  CHECK(tetrahedra.mesh->point_count() == 5);
  CHECK(tetrahedra.mesh->cell_count() == 2);
  CHECK(tetrahedra.size() == 10);
  CHECK(tetrahedra.shape_c_order() == std::vector<int64_t>{2, 5});
  CHECK(tetrahedra.spatial_dims() == 3);
  CHECK(tetrahedra.flat_index({0, 0}) == 0);
  CHECK(tetrahedra.flat_index({4, 0}) == 4);
  CHECK(tetrahedra.flat_index({1, 1}) == 6);
  CHECK_THROWS_AS(tetrahedra.flat_index({1}), Error);
  CHECK_THROWS_AS(tetrahedra.flat_index({0, 2}), Error);
  tetrahedra.validate();
}

TEST_CASE("mesh layout validation names the bad cell, point count or coordinate list") {
  auto check_error = [](const io::GridLayout& layout, const std::string& expected) {
    CHECK_THROWS_WITH_AS(layout.validate(), doctest::Contains(expected.c_str()), Error);
  };
  auto out_of_range = layout_triangles();
  out_of_range.mesh->cells[4] = 4;
  check_error(out_of_range,
              "output mesh triangle 1 refers to point 4, outside 0..3 (the mesh has 4 points");
  auto negative = layout_tetrahedra_time();
  negative.mesh->cells[0] = -1;
  check_error(negative, "output mesh tetrahedron 0 refers to point -1, outside 0..4");
  auto four_d = layout_triangles();
  four_d.mesh->dims = 4;
  check_error(four_d, "output mesh must be 2-D (triangles) or 3-D (tetrahedra), got dims 4");
  auto names = layout_triangles();
  names.names = {"x", "y", "z"};
  check_error(names, "output mesh of dims 2 needs 2 coordinate names, got 3");
  auto no_time_name = layout_tetrahedra_time();
  no_time_name.names.pop_back();
  check_error(no_time_name, "output mesh of dims 3 with time needs 4 coordinate names, got 3");
  auto points = layout_triangles();
  points.mesh->points.pop_back();
  check_error(points, "output mesh points hold 7 values, expected a positive multiple of dims 2");
  auto cells = layout_triangles();
  cells.mesh->cells.pop_back();
  check_error(
      cells,
      "output mesh cells hold 5 point indices, expected a positive multiple of 3 (3 per triangle)");
  auto spatial_axes = layout_triangles();
  spatial_axes.axes = {{0, 1}, {0, 1}};
  check_error(spatial_axes,
              "output mesh layout holds 2 axes; with a mesh, axes holds nothing (no time)");
  auto empty_time = layout_tetrahedra_time();
  empty_time.axes[0].clear();
  check_error(empty_time, "output grid axis 't' has no points");
}

TEST_CASE(
    "2-D triangle mesh output: /mesh/points, /mesh/cells, [n_points] fields, NaN and -1 where no "
    "subdomain wrote") {
  TempDir tmp;
  const auto comm = parallel::Communicator::world();
  const auto layout = layout_triangles();
  // Two subdomains split the points: 0 owns points 1 and 0, 1 owns point 3; nobody owns point 2.
  // With several ranks, subdomain s goes to rank s % size.
  const std::vector<std::vector<int64_t>> owned = {{1, 0}, {3}};
  io::GridContribution c;
  c.fields["u"];
  for (int32_t s = 0; s < 2; ++s) {
    if (s % comm.size() != comm.rank()) continue;
    for (int64_t point : owned[s]) {
      c.indices.push_back(layout.flat_index({point}));
      c.fields["u"].push_back(10.0 * point + s);
      c.subdomain.push_back(s);
    }
  }
  io::GridFileInfo info;
  info.case_name = "square";
  info.attributes_double = {{"iterations", 10}};
  io::write_grid_output(comm, tmp.path.string(), "square", layout, c, info);
  const fs::path h5 = tmp.path / "square.h5";
  REQUIRE(fs::exists(h5));

  const auto points = read_dataset(h5, "/mesh/points");
  CHECK(points.is_f64);
  CHECK(points.shape == std::vector<hsize_t>{4, 2});
  CHECK(points.values == layout.mesh->points);
  const auto cells = read_dataset(h5, "/mesh/cells");
  CHECK(cells.is_i64);
  CHECK(cells.shape == std::vector<hsize_t>{2, 3});
  CHECK(cells.values == std::vector<double>{0, 1, 2, 0, 2, 3});

  const auto u = read_dataset(h5, "/fields/u");
  CHECK(u.is_f64);
  CHECK(u.shape == std::vector<hsize_t>{4});
  CHECK(u.values[0] == 0.0);
  CHECK(u.values[1] == 10.0);
  CHECK(std::isnan(u.values[2]));
  CHECK(u.values[3] == 31.0);
  const auto sub = read_dataset(h5, "/fields/subdomain");
  CHECK(sub.is_i32);
  CHECK(sub.values == std::vector<double>{0, 0, -1, 1});

  CHECK(string_attribute(h5, "case_name") == "square");
  CHECK(string_attribute(h5, "coordinates") == "x,y");
  CHECK(double_attribute(h5, "iterations") == 10);
  CHECK_FALSE(has_link(h5, "/grid"));  // no time, no axis
  CHECK_FALSE(has_link(h5, "/xdmf"));
  CHECK_FALSE(has_link(h5, "/steps"));

  const std::string xmf = read_text(tmp.path / "square.xmf");
  CHECK(xmf == io::xdmf_text(layout, {"u"}, true, "square.h5", "square"));
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "<Topology TopologyType=\"Triangle\" NumberOfElements=\"2\">") == 1);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"2 3\" NumberType=\"Int\" Precision=\"8\" "
              "Format=\"HDF\">square.h5:/mesh/cells<") == 1);
  CHECK(count(xmf, "<Geometry GeometryType=\"XY\">") == 1);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"4 2\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">square.h5:/mesh/points<") == 1);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"4\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">square.h5:/fields/u<") == 1);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"4\" NumberType=\"Int\" Precision=\"4\" "
              "Format=\"HDF\">square.h5:/fields/subdomain<") == 1);
  CHECK(count(xmf, "Center=\"Node\"") == 2);
  CHECK(count(xmf, "Temporal") == 0);
  CHECK(count(xmf, "/grid/") == 0);

  if (comm.size() > 1) {  // only rank 0's mesh is written: every rank must hold the same one
    auto other = layout;
    if (comm.rank() == 1) other.mesh->points[0] = 0.5;
    CHECK_THROWS_WITH_AS(io::write_grid_output(comm, tmp.path.string(), "other", other, c, info),
                         doctest::Contains("ranks disagree"), Error);
  }
}

TEST_CASE(
    "space-time tetrahedron mesh output: [nt, n_points] fields, /steps views, temporal Tetrahedron "
    "XDMF") {
  TempDir tmp;
  const auto layout = layout_tetrahedra_time();
  const std::vector<int64_t> skip = {layout.flat_index({4, 1})};
  io::GridFileInfo info;
  info.case_name = "cube";
  io::write_grid_output(parallel::Communicator::world(), tmp.path.string(), "cube", layout,
                        contribution_for(layout, skip), info);
  const fs::path h5 = tmp.path / "cube.h5";
  CHECK(string_attribute(h5, "coordinates") == "x,y,z,t");
  CHECK(string_attribute(h5, "time_coordinate") == "t");
  CHECK(read_dataset(h5, "/grid/t").values == layout.axes[0]);
  CHECK_FALSE(has_link(h5, "/grid/x"));
  CHECK_FALSE(has_link(h5, "/xdmf"));
  const auto points = read_dataset(h5, "/mesh/points");
  CHECK(points.shape == std::vector<hsize_t>{5, 3});
  CHECK(points.values == layout.mesh->points);
  const auto cells = read_dataset(h5, "/mesh/cells");
  CHECK(cells.is_i64);
  CHECK(cells.shape == std::vector<hsize_t>{2, 4});
  CHECK(cells.values == std::vector<double>{0, 1, 2, 3, 1, 2, 3, 4});

  const auto u = read_dataset(h5, "/fields/u");
  CHECK(u.shape == std::vector<hsize_t>{2, 5});
  for (int64_t i = 0; i < 10; ++i) {
    if (i == 9) {
      CHECK(std::isnan(u.values[i]));
    } else {
      CHECK(u.values[i] == 1000.0 + i);
    }
  }
  CHECK(read_dataset(h5, "/fields/subdomain").values[9] == -1);
  for (int k = 0; k < 2; ++k) {
    for (const std::string field : {"u", "u_exact", "subdomain"}) {
      const auto full = read_dataset(h5, "/fields/" + field);
      const auto step = read_dataset(h5, "/steps/" + std::to_string(k) + "/" + field);
      CHECK(step.shape == std::vector<hsize_t>{5});
      CHECK(step.is_i32 == (field == "subdomain"));
      for (int i = 0; i < 5; ++i) {
        const double expected = full.values[k * 5 + i];
        if (std::isnan(expected)) {
          CHECK(std::isnan(step.values[i]));
        } else {
          CHECK(step.values[i] == expected);
        }
      }
    }
  }

  const std::string xmf = read_text(tmp.path / "cube.xmf");
  CHECK(xmf == io::xdmf_text(layout, {"u", "u_exact"}, true, "cube.h5", "cube"));
  std::string why;
  CHECK_MESSAGE(well_formed_xml(xmf, why), why);
  CHECK(count(xmf, "CollectionType=\"Temporal\"") == 1);
  CHECK(count(xmf, "GridType=\"Uniform\"") == 2);
  CHECK(count(xmf, "<Time Value=\"0.5\"/>") == 1);
  CHECK(count(xmf, "<Topology TopologyType=\"Tetrahedron\" NumberOfElements=\"2\">") == 2);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"2 4\" NumberType=\"Int\" Precision=\"8\" "
              "Format=\"HDF\">cube.h5:/mesh/cells<") == 2);
  CHECK(count(xmf, "<Geometry GeometryType=\"XYZ\">") == 2);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"5 3\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">cube.h5:/mesh/points<") == 2);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"5\" NumberType=\"Float\" Precision=\"8\" "
              "Format=\"HDF\">cube.h5:/steps/1/u_exact<") == 1);
  CHECK(count(xmf,
              "<DataItem Dimensions=\"5\" NumberType=\"Int\" Precision=\"4\" "
              "Format=\"HDF\">cube.h5:/steps/0/subdomain<") == 1);
  CHECK(count(xmf, "<Attribute ") == 6);
  CHECK(count(xmf, "/fields/") == 0);
  CHECK(count(xmf, "HyperSlab") == 0);
}

TEST_CASE("ensure_output_directory creates nested folders and rejects an unwritable one") {
  TempDir tmp;
  const fs::path nested = tmp.path / "a" / "b" / "c";
  io::ensure_output_directory(nested.string());
  MPI_Barrier(MPI_COMM_WORLD);  // every rank's probe file is gone
  CHECK(fs::is_directory(nested));
  CHECK(fs::is_empty(nested));  // the probe file is gone
  CHECK_THROWS_WITH_AS(io::ensure_output_directory("/proc/x"),
                       doctest::Contains("output.directory: cannot create or write '/proc/x': "),
                       Error);
  CHECK_THROWS_WITH_AS(io::ensure_output_directory("/proc/x"),
                       doctest::Contains("; choose a writable folder"), Error);
  std::ofstream(tmp.path / "file") << "x";
  CHECK_THROWS_WITH_AS(io::ensure_output_directory((tmp.path / "file").string()),
                       doctest::Contains("choose a writable folder"), Error);
}
