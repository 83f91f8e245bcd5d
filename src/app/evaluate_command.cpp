// `tessera evaluate RUN_DIR`: a finished run's trained model (every subdomain, as its output
// file holds it) at given points or on a grid, with expressions of the fields such as
// derivatives, on any number of ranks.
#include <cstdlib>
#include <filesystem>
#include <set>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/point_output.hpp"
#include "tessera/app/trained_run.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/point_files.hpp"
#include "tessera/parallel/device_map.hpp"

namespace tessera::app {
namespace {

/// Splits "a,b(c,d),e" at the commas outside parentheses.
std::vector<std::string> top_level_items(const std::string& text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0)
      items.emplace_back();
    else if (c != ' ')
      items.back() += c;
  }
  return items;
}

/// --derivatives: each item parsed as an equation's residual is, named by its text.
std::vector<physics::Equation> requested_expressions(const std::string& text,
                                                     const Problem& problem) {
  std::vector<physics::Equation> expressions;
  if (text.empty()) return expressions;
  std::set<std::string> names(problem.symbols.fields.begin(), problem.symbols.fields.end());
  for (const auto& item : top_level_items(text)) {
    TESSERA_CHECK(!item.empty(), "--derivatives: an empty item in '" << text << "'");
    TESSERA_CHECK(names.insert(item).second,
                  "--derivatives: '" << item << "' is asked for twice (fields are always written)");
    expressions.push_back(
        {item, expr::Expression::parse(item, problem.symbols, "--derivatives '" + item + "'")});
  }
  return expressions;
}

/// --grid x=N,t=M over the domain's bounding box, along the coordinates not named 101 points
/// (11 above 3 inputs, as the output grid's default).
io::GridLayout requested_grid(const std::string& text, const Setup& setup) {
  const auto names = setup.problem.domain->input_names();
  io::Case grid_case = setup.input;
  grid_case.output.grid.clear();
  grid_case.output.mesh_max_cell_size.reset();
  for (const auto& name : names) grid_case.output.grid[name] = names.size() <= 3 ? 101 : 11;
  for (const auto& item : top_level_items(text)) {
    const auto equals = item.find('=');
    const std::string name = item.substr(0, equals);
    TESSERA_CHECK(equals != std::string::npos && grid_case.output.grid.count(name),
                  "--grid: '" << item << "': expected coordinate=points with a coordinate of "
                              << "the case (e.g. " << names.front() << "=101)");
    const std::string count = item.substr(equals + 1);
    char* end = nullptr;
    const long n = std::strtol(count.c_str(), &end, 10);
    TESSERA_CHECK(!count.empty() && *end == '\0' && n >= 2 && n <= 100000,
                  "--grid: '" << item << "': the point count must be an integer from 2 to 100000");
    grid_case.output.grid[name] = n;
  }
  return output_grid(grid_case, setup.problem);
}

/// The default --out: next to the points file with "_values", or <case name>_grid.h5 here.
std::string output_path(const CommandLine& line, const Setup& setup) {
  if (!line.out.empty()) return line.out;
  if (line.points.empty()) return setup.input.name + "_grid.h5";
  std::filesystem::path path(line.points);
  return (path.parent_path() / (path.stem().string() + "_values" + path.extension().string()))
      .string();
}

}  // namespace

int evaluate_command(const CommandLine& line) {
  const auto comm = parallel::Communicator::world();
  Console console(comm.rank() == 0);
  // Refused before the networks are built: a bad name should not wait for them.
  io::is_csv_path(line.out.empty() ? "values.h5" : line.out, "--out");
  if (!line.points.empty()) io::is_csv_path(line.points, "--points");
  TESSERA_CHECK(line.grid.empty() || line.out.empty() || !io::is_csv_path(line.out, "--out"),
                "--out: a grid is written as HDF5 (a reference file's layout); use .h5");

  TrainedRun run = open_trained_run(comm, line.case_file, line.overrides, console);
  const auto& problem = run.setup.problem;
  const auto expressions = requested_expressions(line.derivatives, problem);
  const auto inputs = problem.domain->input_names();
  const std::string path = output_path(line, run.setup);

  io::GridLayout layout;
  io::PointSet set;
  torch::Tensor points;
  if (!line.grid.empty()) {
    layout = requested_grid(line.grid, run.setup);
    points = grid_points(layout);
  } else {
    set = io::read_point_file(line.points, inputs, "--points");
    points = torch::tensor(set.points, torch::kFloat64).reshape({set.count, set.dims});
  }
  // On a grid, points outside an irregular domain are NaN as in the output file; given points
  // are each evaluated by the nearest subdomain, and counted when they lie outside.
  Evaluator evaluator = point_evaluator(comm, run.setup, run.rank, layout, !line.grid.empty());
  const auto values = evaluator.values_at(points, expressions);
  auto names = problem.symbols.fields;
  for (const auto& e : expressions) names.push_back(e.name);
  const auto columns = named_columns(values, names);
  write_on_root(comm, [&] {
    if (line.grid.empty()) {
      const auto outside = points.size(0) - problem.domain->contains(points).sum().item<int64_t>();
      if (outside > 0)
        console.warning(std::to_string(outside) + " of " + std::to_string(points.size(0)) +
                        " points lie outside the domain; the networks extrapolate there");
      io::write_point_values(path, inputs, set, columns);
    } else {
      io::write_grid_values(path, layout, columns);
    }
  });
  console.out() << "tessera: evaluated " << points.size(0) << " points of the model at "
                << "iteration " << run.iteration << " (" << run.checkpoint << ") -> " << path
                << "\n";
  return 0;
}

}  // namespace tessera::app
