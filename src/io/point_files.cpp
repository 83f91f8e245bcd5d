#include "tessera/io/point_files.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hdf5_handle.hpp"
#include "hdf5_read.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/io/write_error.hpp"

namespace tessera::io {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

/// The cells of one CSV row; a cell in double quotes may hold commas (the quotes are dropped).
std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      cells.emplace_back();
    else
      cells.back() += c;
  }
  for (auto& cell : cells) cell = trimmed(cell);
  return cells;
}

bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

std::string names_text(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

PointSet read_csv_points(const std::string& path, const std::vector<std::string>& coordinates,
                         const std::string& label) {
  std::ifstream in(path);
  TESSERA_CHECK(in, label << " cannot be read");
  const auto dims = static_cast<int>(coordinates.size());
  PointSet set;
  set.dims = dims;
  // Column of each coordinate: the header's order, or the input order without a header.
  std::vector<std::size_t> column_of(coordinates.size());
  for (std::size_t k = 0; k < column_of.size(); ++k) column_of[k] = k;
  std::size_t columns = coordinates.size();
  bool first_row = true;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const std::string text = trimmed(line);
    if (text.empty() || text[0] == '#') continue;
    const auto cells = split_commas(text);
    double value = 0;
    if (first_row && !parse_number(cells[0], value)) {
      // A header: the coordinates' columns by name; other columns (values) are not read.
      for (std::size_t k = 0; k < coordinates.size(); ++k) {
        const auto it = std::find(cells.begin(), cells.end(), coordinates[k]);
        TESSERA_CHECK(it != cells.end(), label << " line " << number << ": the header names "
                                               << names_text(cells) << ", expected the columns "
                                               << names_text(coordinates) << " (in any order)");
        column_of[k] = static_cast<std::size_t>(it - cells.begin());
      }
      columns = cells.size();
      first_row = false;
      continue;
    }
    first_row = false;
    TESSERA_CHECK(cells.size() == columns, label << " line " << number << ": " << cells.size()
                                                 << " column(s), expected " << columns << " ("
                                                 << names_text(coordinates) << ", or a header row "
                                                 << "naming them)");
    for (std::size_t k = 0; k < coordinates.size(); ++k) {
      const std::string& cell = cells[column_of[k]];
      TESSERA_CHECK(parse_number(cell, value) && std::isfinite(value),
                    label << " line " << number << ": " << coordinates[k] << " is '" << cell
                          << "', expected a finite number");
      set.points.push_back(value);
    }
  }
  set.count = static_cast<int64_t>(set.points.size()) / std::max(dims, 1);
  TESSERA_CHECK(set.count > 0, label << " holds no points");
  return set;
}

PointSet read_hdf5_points(const std::string& path, const std::vector<std::string>& coordinates,
                          const std::string& label) {
  const auto dims = static_cast<int>(coordinates.size());
  detail::QuietHdf5Errors quiet;
  detail::H5Handle file = detail::file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  TESSERA_CHECK(file.valid(), label << " is not a readable HDF5 file");
  PointSet set;
  set.points = detail::read_point_rows(file.get(), label, dims, set.count);
  set.dims = dims;
  return set;
}

void write_csv(const std::string& path, const std::vector<std::string>& coordinates,
               const PointSet& points, const PointValues& values) {
  std::ofstream out(path, std::ios::trunc);
  auto quoted = [](const std::string& name) {
    return name.find(',') == std::string::npos ? name : "\"" + name + "\"";
  };
  std::string header;
  for (const auto& c : coordinates) header += (header.empty() ? "" : ",") + quoted(c);
  for (const auto& n : values.names) header += "," + quoted(n);
  out << header << "\n";
  char number[32];
  for (int64_t i = 0; i < points.count; ++i) {
    std::string row;
    for (int d = 0; d < points.dims; ++d) {
      std::snprintf(number, sizeof number, "%.17g", points.points[i * points.dims + d]);
      row += (d ? "," : "") + std::string(number);
    }
    for (const auto& column : values.columns) {
      std::snprintf(number, sizeof number, "%.17g", column[static_cast<std::size_t>(i)]);
      row += "," + std::string(number);
    }
    out << row << "\n";
  }
  out.flush();
  if (!out) throw WriteError("cannot write '" + path + "' (a full disk or a missing folder?)");
}

struct Dataset {
  std::string name;
  std::vector<hsize_t> shape;
  const double* data;
};

/// Creates (or replaces) the HDF5 file `path` holding `datasets` as float64.
void write_datasets(const std::string& path, const std::vector<Dataset>& datasets) {
  detail::QuietHdf5Errors quiet;
  auto fail = [&](const std::string& what) {
    throw WriteError("cannot write '" + path + "': " + what + ": " + detail::hdf5_failure_reason());
  };
  detail::H5Handle file =
      detail::file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!file.valid()) fail("create the file");
  detail::H5Handle link = detail::plist_handle(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(link.get(), 1);
  for (const auto& d : datasets) {
    detail::H5Handle space = detail::space_handle(
        H5Screate_simple(static_cast<int>(d.shape.size()), d.shape.data(), nullptr));
    detail::H5Handle dataset =
        detail::dataset_handle(H5Dcreate2(file.get(), d.name.c_str(), H5T_IEEE_F64LE, space.get(),
                                          link.get(), H5P_DEFAULT, H5P_DEFAULT));
    if (!dataset.valid()) fail("create " + d.name);
    if (H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.data) < 0)
      fail("write " + d.name);
  }
  if (!file.close()) fail("close the file");
}

void check_names(const PointValues& values) {
  for (const auto& name : values.names)
    TESSERA_CHECK(
        !name.empty() && name.find('/') == std::string::npos && name.find('"') == std::string::npos,
        "values at points: '" << name << "' cannot name a column (no '/' or '\"')");
}

}  // namespace

bool is_csv_path(const std::string& path, const std::string& label) {
  const std::string extension = lower(std::filesystem::path(path).extension().string());
  if (extension == ".csv") return true;
  TESSERA_CHECK(extension == ".h5" || extension == ".hdf5" || extension == ".hdf",
                label << ": '" << path
                      << "' has an unknown extension; use .h5 (HDF5: /points [n, dims]) or .csv");
  return false;
}

PointSet read_point_file(const std::string& path, const std::vector<std::string>& coordinates,
                         const std::string& label) {
  const std::string named = label + " '" + path + "'";
  TESSERA_CHECK(std::filesystem::is_regular_file(path), named << " does not exist");
  return is_csv_path(path, label) ? read_csv_points(path, coordinates, named)
                                  : read_hdf5_points(path, coordinates, named);
}

void write_point_values(const std::string& path, const std::vector<std::string>& coordinates,
                        const PointSet& points, const PointValues& values) {
  check_names(values);
  if (is_csv_path(path, "output file")) return write_csv(path, coordinates, points, values);
  const auto n = static_cast<hsize_t>(points.count);
  std::vector<Dataset> datasets{
      {"/points", {n, static_cast<hsize_t>(points.dims)}, points.points.data()}};
  for (std::size_t k = 0; k < values.names.size(); ++k)
    datasets.push_back({"/values/" + values.names[k], {n}, values.columns[k].data()});
  write_datasets(path, datasets);
}

void write_grid_values(const std::string& path, const GridLayout& layout,
                       const PointValues& values) {
  check_names(values);
  TESSERA_CHECK(!layout.mesh, "grid values: " << path << ": a mesh is not a grid");
  std::vector<Dataset> datasets;
  for (std::size_t a = 0; a < layout.axes.size(); ++a)
    datasets.push_back({"/grid/" + layout.names[a],
                        {static_cast<hsize_t>(layout.axes[a].size())},
                        layout.axes[a].data()});
  std::vector<hsize_t> shape;
  for (int64_t n : layout.shape_c_order()) shape.push_back(static_cast<hsize_t>(n));
  for (std::size_t k = 0; k < values.names.size(); ++k)
    datasets.push_back({"/fields/" + values.names[k], shape, values.columns[k].data()});
  write_datasets(path, datasets);
}

}  // namespace tessera::io
