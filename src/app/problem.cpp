#include "tessera/app/problem.hpp"

#include "tessera/app/shape_builder.hpp"
#include "tessera/core/determinism.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/table.hpp"
#include "tessera/io/data_table.hpp"
#include "tessera/io/observations.hpp"
#include "tessera/parallel/device_map.hpp"

namespace tessera::app {

torch::Device resolve_device(const io::Case& c, int local_rank) {
  if (c.device == io::DeviceChoice::cpu) return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available();
  if (c.device == io::DeviceChoice::cuda)
    TESSERA_CHECK(have_cuda, c.file << ": device: 'cuda' requested but LibTorch sees no CUDA "
                                       "device (or was built without CUDA); use \"auto\" or "
                                       "\"cpu\"");
  if (!have_cuda) return torch::kCPU;
  const int visible = static_cast<int>(torch::cuda::device_count());
  try {
    const int index = parallel::cuda_device_for(local_rank, visible, c.device_index);
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  } catch (const Error& e) {
    throw Error(c.file + ": " + e.what());
  }
}

namespace {

expr::Expression parse(const io::Case& c, const io::ExpressionText& text,
                       const expr::SymbolTable& symbols) {
  try {
    return expr::Expression::parse(text.text, symbols, text.key);
  } catch (const Error& e) {
    throw Error(c.file + ": " + e.what());
  }
}

std::shared_ptr<const expr::Table> load_table(const io::Case& c,
                                              const std::vector<std::string>& inputs,
                                              const std::string& name, const io::DataSpec& spec) {
  const std::string key = "data." + name;
  io::DataTable table;
  try {
    table = io::read_data_table(spec.file, spec.dataset, inputs, key);
  } catch (const Error& e) {
    throw Error(c.file + ": " + e.what());
  }
  try {
    return std::make_shared<const expr::Table>(
        name, std::move(table.axes), std::move(table.grid), std::move(table.values),
        spec.interpolation == io::InterpolationChoice::nearest ? expr::Interpolation::nearest
                                                               : expr::Interpolation::linear);
  } catch (const Error& e) {
    // The table's own checks (increasing axes, sizes) read "<name>: ..."; name the file.
    const std::string what = e.what();
    const std::string detail = what.substr(std::min(what.size(), name.size() + 2));
    throw Error(c.file + ": " + key + ": data file '" + spec.file + "': " + detail);
  }
}

/// The grid of tabulated data must span the domain along each of its axes: a value outside it
/// would be an extrapolation no one asked for.
void check_covers(const io::Case& c, const std::vector<std::string>& names,
                  const expr::Table& table, const geometry::Box& domain) {
  for (std::size_t k = 0; k < table.axes().size(); ++k) {
    const auto at = std::find(names.begin(), names.end(), table.axes()[k]) - names.begin();
    const double lo = domain.lo[static_cast<std::size_t>(at)];
    const double hi = domain.hi[static_cast<std::size_t>(at)];
    const auto& axis = table.axis(static_cast<int>(k));
    const double slack = 1e-9 * (axis.back() - axis.front());
    TESSERA_CHECK(axis.front() <= lo + slack && axis.back() >= hi - slack,
                  c.file << ": data." << table.name() << ": the grid covers " << table.axes()[k]
                         << " in [" << axis.front() << ", " << axis.back()
                         << "] but the domain spans [" << lo << ", " << hi
                         << "] (extend the data file's grid to cover the domain)");
  }
}

int field_index(const io::Case& c, const std::string& field) {
  for (std::size_t i = 0; i < c.fields.size(); ++i)
    if (c.fields[i] == field) return static_cast<int>(i);
  TESSERA_FAIL(c.file << ": unknown field '" << field << "'");
}

/// The pointwise condition types (periodic and data conditions are planned apart).
physics::ConditionType condition_type(const io::ConditionSpec& spec) {
  switch (spec.type) {
    case io::ConditionKind::dirichlet:
      return physics::ConditionType::dirichlet;
    case io::ConditionKind::neumann:
      return physics::ConditionType::neumann;
    case io::ConditionKind::robin:
      return physics::ConditionType::robin;
    case io::ConditionKind::initial:
      return physics::ConditionType::initial;
    case io::ConditionKind::residual:
      return physics::ConditionType::residual;
    case io::ConditionKind::periodic:
    case io::ConditionKind::data:
      break;
  }
  TESSERA_UNREACHABLE(spec.key << " is not a pointwise condition");
}

/// The first row of `points` [n, inputs] outside the domain, if any.
std::optional<int64_t> first_outside(const torch::Tensor& points, const geometry::Domain& domain) {
  const auto inside = domain.contains(points);
  if (inside.all().item<bool>()) return std::nullopt;
  return torch::logical_not(inside).nonzero().min().item<int64_t>();
}

/// "x = 0.5, t = 1": row `row` of `points` with the inputs' names.
std::string describe_point(const torch::Tensor& points, int64_t row,
                           const geometry::Domain& domain) {
  std::ostringstream text;
  const auto names = domain.input_names();
  for (int64_t k = 0; k < points.size(1); ++k)
    text << (k ? ", " : "") << names[static_cast<std::size_t>(k)] << " = "
         << points[row][k].item<double>();
  return text.str();
}

/// Reads a data condition's file and checks that every observation lies inside the domain.
DataPlan read_data(const io::Case& c, const io::ConditionSpec& spec,
                   const geometry::Domain& domain) {
  const auto obs = [&] {
    try {
      return io::read_observations(spec.file, domain.dims(), spec.fields, spec.key + ".file");
    } catch (const Error& e) {
      throw Error(c.file + ": " + e.what());
    }
  }();
  DataPlan plan;
  for (const auto& f : spec.fields) plan.fields.push_back(field_index(c, f));
  plan.points = torch::from_blob(const_cast<double*>(obs.points.data()), {obs.count, obs.dims},
                                 torch::kFloat64)
                    .clone();
  plan.values =
      torch::from_blob(const_cast<double*>(obs.values.data()),
                       {obs.count, static_cast<int64_t>(spec.fields.size())}, torch::kFloat64)
          .clone();
  if (const auto row = first_outside(plan.points, domain))
    TESSERA_FAIL(c.file << ": " << spec.key << ".file: observation " << *row << " of '" << spec.file
                        << "' (" << describe_point(plan.points, *row, domain)
                        << ") lies outside the domain; remove it or fix the geometry");
  return plan;
}

/// A dirichlet or residual condition at the points of `"on": {"points": ...}`, which must lie
/// inside the domain. A point has no normal, so the expressions cannot read n_<x>.
DataPlan point_condition(const io::Case& c, const io::ConditionSpec& spec,
                         const expr::SymbolTable& symbols, const geometry::Domain& domain) {
  expr::SymbolTable at_points = symbols;
  at_points.extra.clear();
  physics::Condition condition;
  condition.name = spec.name;
  condition.type = condition_type(spec);
  if (!spec.field.empty()) condition.field = field_index(c, spec.field);
  if (spec.value) condition.value = parse(c, *spec.value, at_points);
  if (spec.expression) condition.expression = parse(c, *spec.expression, at_points);
  DataPlan plan;
  const auto n = static_cast<int64_t>(spec.at_points.size());
  plan.points = torch::empty({n, domain.dims()}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < domain.dims(); ++k)
      plan.points[i][k] = spec.at_points[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)];
  if (const auto row = first_outside(plan.points, domain))
    TESSERA_FAIL(c.file << ": " << spec.key << ".on.points[" << *row << "]: the point ("
                        << describe_point(plan.points, *row, domain) << ") of condition '"
                        << spec.name << "' lies outside the domain; move it inside or fix "
                        << "the geometry");
  plan.condition = std::move(condition);
  return plan;
}

/// The distance and value of a condition enforced exactly. Its set must be where a simple
/// factor vanishes without touching the domain's inside: the start time, or faces of the
/// domain's bounding box, each a linear factor scaled to 1 across the box.
physics::ExactPiece exact_piece(const io::Case& c, const io::ConditionSpec& spec,
                                const physics::Condition& condition,
                                const geometry::Domain& domain) {
  const std::string key = c.file + ": " + spec.key + ".enforce";
  TESSERA_CHECK(condition.value->derivatives().empty(),
                key << ": \"exact\" needs a value that does not read the fields; use "
                       "\"penalty\"");
  // The value is built into the network's output, outside the shared parameters' reach.
  TESSERA_CHECK(!condition.value->uses_parameters(),
                key << ": \"exact\" needs a value that does not read trainable parameters; use "
                       "\"penalty\"");
  // Its derivatives come from autograd through the value, where tabulated data would give a
  // second derivative of zero (linear) or no derivative at all (nearest) without an error.
  TESSERA_CHECK(!condition.value->uses_tables(),
                key << ": \"exact\" needs a value that does not read tabulated data; use "
                       "\"penalty\"");
  physics::ExactPiece piece{{}, *condition.value};
  if (condition.type == physics::ConditionType::initial) {
    const auto range = domain.time_range();
    piece.factors.push_back({domain.spatial_dims(), range[0], 1.0, range[1] - range[0]});
    return piece;
  }
  TESSERA_CHECK(!condition.on.initial && !condition.on.terminal,
                key << ": \"exact\" holds on spatial boundary parts only");
  const auto box = domain.shape().bounding_box();
  for (int part : condition.on.parts) {
    const auto& boundary = domain.shape().boundary_parts().at(static_cast<std::size_t>(part));
    const auto axis = boundary.plane ? boundary.plane->axis : -1;
    const double length = axis >= 0 ? box.extent(axis) : 0.0;
    const double value = axis >= 0 ? boundary.plane->value : 0.0;
    const bool lower = axis >= 0 && std::abs(value - box.lo[axis]) <= 1e-12 * length;
    const bool upper = axis >= 0 && std::abs(value - box.hi[axis]) <= 1e-12 * length;
    TESSERA_CHECK(lower || upper,
                  key << ": \"exact\" needs boundary parts on faces of the domain's bounding "
                      << "box (such as a box's or an interval's), and " << boundary.label
                      << " is not; use \"penalty\" for this condition");
    // Scaled to 1 across the box, with the inside's sign.
    piece.factors.push_back({axis, value, lower ? 1.0 : -1.0, length});
  }
  return piece;
}

ConditionPlan build_condition(const io::Case& c, const io::ConditionSpec& spec,
                              const expr::SymbolTable& symbols, const geometry::Domain& domain) {
  ConditionPlan plan;
  plan.name = spec.name;
  plan.points = spec.points;
  auto with_file = [&](auto&& make) {
    try {
      return make();
    } catch (const Error& e) {
      throw Error(c.file + ": " + e.what());
    }
  };
  if (spec.type == io::ConditionKind::periodic) {
    plan.periodic_faces =
        with_file([&] { return domain.periodic_faces(spec.axis, spec.key + ".axis"); });
    return plan;
  }
  if (spec.type == io::ConditionKind::data) {
    plan.data = read_data(c, spec, domain);
    return plan;
  }
  if (!spec.at_points.empty()) {
    plan.data = point_condition(c, spec, symbols, domain);
    return plan;
  }
  physics::Condition condition;
  condition.name = spec.name;
  condition.type = condition_type(spec);
  if (!spec.field.empty()) condition.field = field_index(c, spec.field);
  auto optional_expression = [&](const std::optional<io::ExpressionText>& text) {
    return text ? std::optional<expr::Expression>(parse(c, *text, symbols)) : std::nullopt;
  };
  condition.value = optional_expression(spec.value);
  condition.a = optional_expression(spec.a);
  condition.b = optional_expression(spec.b);
  condition.expression = optional_expression(spec.expression);
  if (condition.type == physics::ConditionType::initial && !spec.derivative.empty())
    condition.time_axis = domain.axis_index(spec.derivative);
  const std::string on =
      spec.on.empty() && condition.type == physics::ConditionType::initial ? "initial" : spec.on;
  condition.on = with_file([&] { return domain.parse_selector(on, spec.key + ".on"); });
  if (spec.exact) plan.exact = exact_piece(c, spec, condition, domain);
  plan.pointwise = std::move(condition);
  return plan;
}

}  // namespace

Problem build_problem(const io::Case& c, int local_rank) {
  Problem p;
  p.dtype = c.dtype == io::FloatType::float64 ? torch::kFloat64 : torch::kFloat32;
  p.device = resolve_device(c, local_rank);
  core::make_reductions_deterministic(p.device);
  switch (c.training.collocation.sampler) {
    case io::SamplerChoice::uniform:
      p.sampler = geometry::SamplerKind::uniform;
      break;
    case io::SamplerChoice::lhs:
      p.sampler = geometry::SamplerKind::lhs;
      break;
    case io::SamplerChoice::sobol:
      p.sampler = geometry::SamplerKind::sobol;
      break;
  }

  p.symbols.spatial = c.coordinates;
  if (c.time) p.symbols.time = c.time->name;
  p.symbols.fields = c.fields;
  p.symbols.constants = c.constants;
  for (const auto& [name, spec] : c.parameters) {
    if (!spec.trainable) {
      p.symbols.constants[name] = spec.initial;  // a fixed parameter is a constant
      continue;
    }
    p.symbols.parameters.push_back(name);
    p.parameters.push_back({name, spec.initial, spec.positive});
  }
  p.symbols.extra = physics::normal_names(c.coordinates);
  for (const auto& [name, text] : c.definitions) p.symbols.definitions[name] = text.text;
  for (const auto& [name, spec] : c.data)
    p.symbols.tables[name] = load_table(c, p.symbols.coordinates(), name, spec);
  // Every definition is parsed once on its own, so that one no expression uses is still
  // checked (and a cycle found) before training.
  for (const auto& [name, text] : c.definitions) {
    try {
      expr::check_definition(name, p.symbols, text.key);
    } catch (const Error& e) {
      throw Error(c.file + ": " + e.what());
    }
  }

  std::optional<std::array<double, 2>> time_range;
  if (c.time) time_range = c.time->range;
  p.domain = [&] {
    try {
      return std::make_shared<const geometry::Domain>(build_shape(c), c.coordinates, time_range,
                                                      c.time ? c.time->name : "t", c.geometry.tags);
    } catch (const Error& e) {
      throw Error(std::string(e.what()).rfind(c.file, 0) == 0 ? e.what()
                                                              : c.file + ": " + e.what());
    }
  }();
  for (const auto& [name, table] : p.symbols.tables)
    check_covers(c, p.symbols.coordinates(), *table, p.domain->bounding_box());

  for (const auto& eq : c.equations) {
    p.equations.push_back({eq.name, parse(c, eq.residual, p.symbols)});
    std::vector<expr::Expression> flux;
    for (const auto& component : eq.flux) flux.push_back(parse(c, component, p.symbols));
    if (!flux.empty()) {
      TESSERA_CHECK(static_cast<int>(flux.size()) == p.domain->spatial_dims(),
                    c.file << ": equations." << eq.name
                           << ".flux: needs one expression per spatial "
                              "coordinate ("
                           << p.domain->spatial_dims() << "), got " << flux.size());
      p.fluxes.push_back(std::move(flux));
    }
    p.term_names.push_back(eq.name);
    p.weights[eq.name] = eq.weight;
  }
  for (const auto& spec : c.conditions) {
    p.conditions.push_back(build_condition(c, spec, p.symbols, *p.domain));
    p.term_names.push_back(spec.name);
    p.weights[spec.name] = spec.weight;
  }
  for (const auto& [name, weight] : c.training.weights.fixed) p.weights[name] = weight;
  for (const auto& [field, text] : c.exact) {
    expr::SymbolTable closed_form = p.symbols;
    closed_form.fields.clear();  // an exact solution may not read the unknowns
    p.exact.emplace(field, parse(c, text, closed_form));
  }
  if (c.output.points_file)
    p.output_points = io::read_point_file(*c.output.points_file, p.domain->input_names(),
                                          c.file + ": output.points:");
  if (c.reference_file) {
    try {
      p.reference = io::read_reference(*c.reference_file, p.domain->input_names(),
                                       c.time.has_value(), c.fields);
    } catch (const Error& e) {
      throw Error(c.file + ": reference.file: " + e.what() +
                  " (the shipped Burgers reference is made by tools/make_data.sh)");
    }
  }
  return p;
}

}  // namespace tessera::app
