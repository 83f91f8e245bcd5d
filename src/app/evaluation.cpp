#include "tessera/app/evaluation.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/planar.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::app {
namespace {

// Points per evaluation chunk: bounds the memory of the derivative graph on big grids.
constexpr int64_t chunk_size = 16384;

torch::Tensor reference_values(const io::Reference& reference,
                               const std::vector<std::string>& fields) {
  std::vector<torch::Tensor> columns;
  for (const auto& f : fields) {
    auto it = reference.fields.find(f);
    if (it == reference.fields.end())
      columns.push_back(torch::full({reference.count()}, NAN, torch::kFloat64));
    else
      columns.push_back(torch::tensor(it->second, torch::kFloat64));
  }
  return torch::stack(columns, 1);
}

/// Closed-form values of every field at x (NaN for fields without one): [n, fields].
torch::Tensor exact_values(const Problem& p, const torch::Tensor& x) {
  std::vector<torch::Tensor> columns;
  expr::Environment env;
  env.coordinates = x;
  for (const auto& f : p.symbols.fields) {
    auto it = p.exact.find(f);
    columns.push_back(it == p.exact.end() ? torch::full({x.size(0)}, NAN, torch::kFloat64)
                                          : it->second.evaluate(env).to(torch::kFloat64));
  }
  return torch::stack(columns, 1);
}

bool same_grid(const io::GridLayout& a, const io::GridLayout& b) {
  return a.names == b.names && a.axes == b.axes && !a.mesh && !b.mesh;
}

std::vector<double> evenly_spaced(double lo, double hi, int64_t n) {
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1);
  return values;
}

/// output.mesh: a triangle or tetrahedral mesh of the spatial shape (CGAL's meshers).
io::MeshPoints shape_mesh(const geometry::Shape& shape, double max_cell_size) {
  const auto mesh = shape.dims() == 2
                        ? geometry::mesh_region(shape.polygons(max_cell_size), max_cell_size)
                        : geometry::mesh_volume(shape.surface(max_cell_size), max_cell_size);
  return {mesh.dims, mesh.points, mesh.cells};
}

/// Rank 0's mesh on every rank (one mesher run; Mesh_3 need not be reproducible across
/// processes). Sent as sums of doubles: exact for coordinates and for indices below 2^53.
io::MeshPoints shared_from_rank0(const parallel::Communicator& comm, io::MeshPoints mesh) {
  const bool root = comm.rank() == 0;
  std::vector<double> sizes = {root ? static_cast<double>(mesh.dims) : 0.0,
                               root ? static_cast<double>(mesh.points.size()) : 0.0,
                               root ? static_cast<double>(mesh.cells.size()) : 0.0};
  comm.sum_in_place(sizes);
  std::vector<double> data(static_cast<std::size_t>(sizes[1] + sizes[2]), 0.0);
  if (root) {
    std::copy(mesh.points.begin(), mesh.points.end(), data.begin());
    std::copy(mesh.cells.begin(), mesh.cells.end(), data.begin() + mesh.points.size());
  }
  comm.sum_in_place(data);
  const auto n_points = static_cast<std::size_t>(sizes[1]);
  io::MeshPoints out;
  out.dims = static_cast<int>(sizes[0]);
  out.points.assign(data.begin(), data.begin() + n_points);
  out.cells.reserve(data.size() - n_points);
  for (std::size_t i = n_points; i < data.size(); ++i)
    out.cells.push_back(static_cast<int64_t>(data[i]));
  return out;
}

/// Points per axis that output.grid leaves out: 101, but 11 beyond 3 inputs, where 101 per
/// axis would be 10^8 points and more (docs/case-format.md, "Output").
int64_t default_grid_points(std::size_t inputs) { return inputs <= 3 ? 101 : 11; }

}  // namespace

io::GridLayout output_grid(const io::Case& c, const Problem& p,
                           const parallel::Communicator* comm) {
  if (p.reference && !p.reference->scattered() && c.output.grid.empty() &&
      !c.output.mesh_max_cell_size)
    return p.reference->layout;
  io::GridLayout layout;
  layout.names = p.domain->input_names();
  layout.has_time = p.domain->has_time();
  const auto box = p.domain->bounding_box();
  if (c.output.mesh_max_cell_size) {
    TESSERA_CHECK(p.domain->spatial_dims() >= 2,
                  c.file << ": output.mesh: a mesh needs a 2-D or 3-D geometry; use output.grid");
    const bool mesher = !comm || comm->rank() == 0;
    std::string failure;
    try {
      if (mesher) layout.mesh = shape_mesh(p.domain->shape(), *c.output.mesh_max_cell_size);
    } catch (const Error& e) {
      failure = c.file + ": output.mesh: " + e.what();
    }
    if (comm) {
      TESSERA_CHECK(!comm->any(!failure.empty()),
                    (failure.empty() ? "output.mesh: rank 0 failed to mesh the domain" : failure));
      layout.mesh = shared_from_rank0(*comm, layout.mesh.value_or(io::MeshPoints{}));
    } else if (!failure.empty()) {
      throw Error(failure);
    }
    if (layout.has_time) {
      const int t = p.domain->spatial_dims();
      layout.axes.push_back(evenly_spaced(box.lo[t], box.hi[t], c.output.mesh_times));
    }
    return layout;
  }
  for (std::size_t axis = 0; axis < layout.names.size(); ++axis) {
    auto it = c.output.grid.find(layout.names[axis]);
    const int64_t n =
        it == c.output.grid.end() ? default_grid_points(layout.names.size()) : it->second;
    layout.axes.push_back(evenly_spaced(box.lo[axis], box.hi[axis], n));
  }
  return layout;
}

torch::Tensor grid_points(const io::GridLayout& layout) {
  if (layout.mesh) {  // mesh points, repeated for every time value (time slowest)
    const auto& mesh = *layout.mesh;
    auto space =
        torch::tensor(mesh.points, torch::kFloat64).reshape({mesh.point_count(), mesh.dims});
    if (!layout.has_time) return space;
    const auto times = torch::tensor(layout.axes.back(), torch::kFloat64);
    const auto nt = times.size(0);
    return torch::cat(
        {space.repeat({nt, 1}), times.repeat_interleave(mesh.point_count()).unsqueeze(1)}, 1);
  }
  std::vector<torch::Tensor> axes;
  for (const auto& a : layout.axes) axes.push_back(torch::tensor(a, torch::kFloat64));
  // meshgrid "ij" over reversed axes gives time slowest and the first coordinate fastest.
  std::vector<torch::Tensor> reversed(axes.rbegin(), axes.rend());
  auto grids = torch::meshgrid(reversed, "ij");
  std::vector<torch::Tensor> columns;
  for (auto it = grids.rbegin(); it != grids.rend(); ++it) columns.push_back(it->reshape({-1}));
  return torch::stack(columns, 1);
}

Evaluator::Evaluator(parallel::Communicator comm, const Problem& problem,
                     std::vector<train::SubdomainModel*> owned, SubdomainOf subdomain_of,
                     SubdomainOf nearest_subdomain, int subdomains, io::GridLayout output)
    : comm_(comm),
      problem_(problem),
      owned_(std::move(owned)),
      subdomain_of_(std::move(subdomain_of)),
      nearest_subdomain_(std::move(nearest_subdomain)),
      subdomains_(subdomains),
      output_(std::move(output)) {
  torch::Tensor points, exact;
  if (problem_.reference) {
    const auto& reference = *problem_.reference;
    points =
        reference.scattered()
            ? torch::tensor(reference.points, torch::kFloat64)
                  .reshape({reference.count(), static_cast<int64_t>(reference.layout.names.size())})
            : grid_points(reference.layout);
    exact = reference_values(reference, problem_.symbols.fields);
  } else if (!problem_.exact.empty() && !output_.names.empty()) {
    points = grid_points(output_);
    exact = exact_values(problem_, points);
  }
  if (!points.defined()) return;
  // Scattered reference points are all scored, each by its nearest subdomain: mesh nodes on a
  // curved boundary may lie a rounding error outside the domain.
  const auto owner = problem_.reference && problem_.reference->scattered()
                         ? nearest_subdomain_(points)
                         : subdomain_of_(points);
  for (auto* model : owned_) {
    const auto mask = owner == model->id;
    error_points_.push_back(points.index({mask}));
    error_exact_.push_back(exact.index({mask}));
  }
}

namespace {

/// The dtype the network trained last in (a stage may have changed the run's).
torch::Dtype network_dtype(train::SubdomainModel& model) {
  return model.network->parameters().front().scalar_type();
}

}  // namespace

torch::Tensor Evaluator::values(train::SubdomainModel& model, const torch::Tensor& x) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> chunks;
  for (int64_t start = 0; start < x.size(0); start += chunk_size) {
    auto part = x.slice(0, start, std::min(start + chunk_size, x.size(0)));
    chunks.push_back(model.fields
                         ->values(part.to(problem_.device, network_dtype(model)),
                                  static_cast<int>(problem_.symbols.fields.size()))
                         .to(torch::kCPU, torch::kFloat64));
  }
  if (chunks.empty())
    return torch::zeros({0, static_cast<int64_t>(problem_.symbols.fields.size())}, torch::kFloat64);
  return torch::cat(chunks, 0);
}

torch::Tensor Evaluator::expression_values(
    train::SubdomainModel& model, const torch::Tensor& x,
    const std::vector<physics::Equation>& expressions) const {
  const auto width = static_cast<int64_t>(expressions.size());
  if (width == 0) return torch::zeros({x.size(0), 0}, torch::kFloat64);
  std::vector<torch::Tensor> chunks{torch::zeros({0, width}, torch::kFloat64)};
  for (int64_t start = 0; start < x.size(0); start += chunk_size) {
    auto part = x.slice(0, start, std::min(start + chunk_size, x.size(0)))
                    .to(problem_.device, network_dtype(model));
    std::vector<torch::Tensor> columns;
    for (const auto& r : physics::equation_residuals(expressions, *model.fields, part,
                                                     /*create_graph=*/false))
      columns.push_back(r.detach().reshape({-1}).to(torch::kCPU, torch::kFloat64));
    chunks.push_back(torch::stack(columns, 1));
  }
  return torch::cat(chunks, 0);
}

torch::Tensor Evaluator::values_at(const torch::Tensor& points,
                                   const std::vector<physics::Equation>& expressions) {
  const auto fields = static_cast<int64_t>(problem_.symbols.fields.size());
  const auto width = fields + static_cast<int64_t>(expressions.size());
  // Each point's row is filled by the one rank that owns it and zero elsewhere, so the sum
  // over ranks is exact.
  auto rows = torch::zeros({points.size(0), width}, torch::kFloat64);
  const auto owner = subdomain_of_(points);
  for (auto* model : owned_) {
    const auto indices = torch::nonzero(owner == model->id).flatten();
    if (indices.numel() == 0) continue;
    const auto x = points.index({indices});
    auto values_here = values(*model, x);
    if (!expressions.empty())
      values_here = torch::cat({values_here, expression_values(*model, x, expressions)}, 1);
    rows.index_put_({indices}, values_here);
  }
  std::vector<double> flat(rows.data_ptr<double>(), rows.data_ptr<double>() + rows.numel());
  comm_.sum_in_place(flat);
  rows = torch::tensor(flat, torch::kFloat64).reshape({points.size(0), width});
  rows.index_put_({owner < 0}, NAN);
  return rows;
}

train::RelativeErrors Evaluator::relative_errors() {
  const auto& fields = problem_.symbols.fields;
  // Per field and subdomain slot: sum (u - ue)^2 and sum ue^2. One rank fills each slot and
  // the slots are added in subdomain order, so the result is the same on any rank count.
  const std::size_t slots = static_cast<std::size_t>(subdomains_);
  std::vector<double> figures(2 * fields.size() * slots, 0.0);
  for (std::size_t k = 0; k < owned_.size() && k < error_points_.size(); ++k) {
    const auto u = values(*owned_[k], error_points_[k]);
    const std::size_t slot = static_cast<std::size_t>(owned_[k]->id);
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const auto exact = error_exact_[k].select(1, static_cast<int64_t>(f));
      if (exact.numel() == 0 || std::isnan(exact[0].item<double>())) continue;
      figures[2 * (f * slots + slot)] =
          (u.select(1, static_cast<int64_t>(f)) - exact).pow(2).sum().item<double>();
      figures[2 * (f * slots + slot) + 1] = exact.pow(2).sum().item<double>();
    }
  }
  comm_.sum_in_place(figures);
  std::vector<double> sums(2 * fields.size(), 0.0);
  for (std::size_t f = 0; f < fields.size(); ++f)
    for (std::size_t slot = 0; slot < slots; ++slot) {
      sums[2 * f] += figures[2 * (f * slots + slot)];
      sums[2 * f + 1] += figures[2 * (f * slots + slot) + 1];
    }
  train::RelativeErrors errors;
  double misfit = 0, norm = 0;
  for (std::size_t f = 0; f < fields.size(); ++f)
    if (known(f) && sums[2 * f + 1] > 0) {
      errors.fields[fields[f]] = std::sqrt(sums[2 * f] / sums[2 * f + 1]);
      misfit += sums[2 * f];
      norm += sums[2 * f + 1];
    }
  if (errors.fields.size() >= 2) errors.stacked = std::sqrt(misfit / norm);
  return errors;
}

bool Evaluator::known(std::size_t f) const {
  const auto& field = problem_.symbols.fields.at(f);
  return problem_.reference ? problem_.reference->fields.count(field) > 0
                            : problem_.exact.count(field) > 0;
}

std::vector<std::string> Evaluator::fields_without_relative_error() {
  const auto& fields = problem_.symbols.fields;
  // Per field the sum of squares of the values relative_errors divides by (the same columns:
  // a column whose first value is NaN is not known there) and how many there are, in any
  // order: only whether they are zero matters.
  std::vector<double> figures(2 * fields.size(), 0.0);
  for (const auto& exact_values : error_exact_)
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const auto exact = exact_values.select(1, static_cast<int64_t>(f));
      if (exact.numel() == 0 || std::isnan(exact[0].item<double>())) continue;
      figures[2 * f] += exact.pow(2).sum().item<double>();
      figures[2 * f + 1] += static_cast<double>(exact.numel());
    }
  comm_.sum_in_place(figures);
  std::vector<std::string> names;
  for (std::size_t f = 0; f < fields.size(); ++f)
    if (known(f) && figures[2 * f + 1] > 0 && figures[2 * f] == 0) names.push_back(fields[f]);
  return names;
}

io::GridContribution Evaluator::output_contribution() {
  const auto& fields = problem_.symbols.fields;
  const auto points = grid_points(output_);
  const auto owner = subdomain_of_(points);
  torch::Tensor exact;
  if (!problem_.exact.empty())
    exact = exact_values(problem_, points);
  else if (problem_.reference && same_grid(problem_.reference->layout, output_))
    exact = reference_values(*problem_.reference, fields);

  io::GridContribution out;
  for (const auto& f : fields) out.fields[f];
  for (const auto& eq : problem_.equations) out.fields["residual_" + eq.name];
  if (exact.defined())
    for (const auto& f : fields) out.fields[f + "_exact"], out.fields[f + "_error"];

  auto append = [](std::vector<double>& into, const torch::Tensor& t) {
    auto c = t.contiguous();
    into.insert(into.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  for (auto* model : owned_) {
    const auto indices = torch::nonzero(owner == model->id).flatten();
    const auto x = points.index({indices});
    const auto u = values(*model, x);
    for (std::size_t f = 0; f < fields.size(); ++f)
      append(out.fields[fields[f]], u.select(1, static_cast<int64_t>(f)));
    const auto residuals = expression_values(*model, x, problem_.equations);
    for (std::size_t e = 0; e < problem_.equations.size(); ++e)
      append(out.fields["residual_" + problem_.equations[e].name],
             residuals.select(1, static_cast<int64_t>(e)));
    if (exact.defined()) {
      const auto ex = exact.index({indices});
      for (std::size_t f = 0; f < fields.size(); ++f) {
        const auto column = ex.select(1, static_cast<int64_t>(f));
        append(out.fields[fields[f] + "_exact"], column);
        append(out.fields[fields[f] + "_error"], u.select(1, static_cast<int64_t>(f)) - column);
      }
    }
    const auto idx = indices.contiguous();
    out.indices.insert(out.indices.end(), idx.data_ptr<int64_t>(),
                       idx.data_ptr<int64_t>() + idx.numel());
    out.subdomain.insert(out.subdomain.end(), indices.size(0), model->id);
  }
  return out;
}

namespace {

Evaluator evaluator_over(const parallel::Communicator& comm, const Setup& setup,
                         const RankModels& rank, io::GridLayout layout, bool mask_outside) {
  const auto& partition = setup.decomposition.partition;
  const auto& problem = setup.problem;
  SubdomainOf subdomain_of = [&partition, &problem, mask_outside](const torch::Tensor& x) {
    return mask_outside ? subdomain_in_domain(partition, *problem.domain, x)
                        : partition.subdomain_of(x);
  };
  SubdomainOf nearest = [&partition](const torch::Tensor& x) { return partition.subdomain_of(x); };
  return Evaluator(comm, problem,
                   rank.replica.index == 0 ? rank.owned() : std::vector<train::SubdomainModel*>{},
                   subdomain_of, nearest, partition.size(), std::move(layout));
}

}  // namespace

Evaluator make_evaluator(const parallel::Communicator& comm, const Setup& setup,
                         const RankModels& rank) {
  auto layout = output_grid(setup.input, setup.problem, &comm);
  const bool mask_outside = !layout.mesh;
  return evaluator_over(comm, setup, rank, std::move(layout), mask_outside);
}

Evaluator point_evaluator(const parallel::Communicator& comm, const Setup& setup,
                          const RankModels& rank, io::GridLayout layout, bool mask_outside) {
  return evaluator_over(comm, setup, rank, std::move(layout), mask_outside);
}

}  // namespace tessera::app
