#include "tessera/physics/equation_group.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

torch::Tensor Replica::rows(const torch::Tensor& x) const {
  if (count == 1) return x;
  const int64_t n = x.size(0);
  return x.slice(0, n * index / count, n * (index + 1) / count);
}

torch::Tensor Chunk::rows(const torch::Tensor& x) const {
  if (count == 1) return x;
  const int64_t n = x.size(0);
  return x.slice(0, first(n), end(n));
}

torch::Tensor Probe::value() const {
  if (!residual.defined() || residual.numel() == 0) return {};
  const auto r = residual.reshape({residual.size(0), -1});
  const auto opts = torch::TensorOptions().dtype(torch::kLong).device(r.device());
  const auto row = torch::arange(first, first + r.size(0), opts).unsqueeze(1);
  const auto column = torch::arange(r.size(1), opts).unsqueeze(0);
  // A linear congruential step of the element's index; its bit 16 is the sign.
  const auto index = row * r.size(1) + column;
  const auto bit = (index * 1103515245 + 12345).floor_divide(65536).remainder(2);
  const auto signs = (1 - 2 * bit).to(r.scalar_type());
  return (signs * r).sum() / std::sqrt(static_cast<double>(std::max<int64_t>(whole, 1)));
}

TermValue Replica::term(std::string name, torch::Tensor mean_square, const torch::Tensor& residual,
                        int64_t held, int64_t all, const Chunk& chunk) const {
  // This replica's rows start at all * index / count of the whole sample, the chunk's rows at
  // chunk.first(held) of the replica's.
  const int64_t first = (count > 1 ? all * index / count : 0) + chunk.first(held);
  const int64_t whole = count > 1 ? all : held;
  const int64_t rows = chunk.end(held) - chunk.first(held);
  return {std::move(name), std::move(mean_square), rows, count > 1 || chunk.count > 1 ? whole : 0,
          Probe{residual, first, whole}};
}

std::vector<TermValue> LossGroup::evaluate(const FieldEvaluator& fields, bool create_graph,
                                           const Chunk& chunk) const {
  std::vector<expr::Environment> environments;
  for (const auto& r : requests(fields, chunk))
    environments.push_back(r.fields->evaluate(r.x, r.keys, create_graph, r.extra));
  return terms(environments, chunk);
}

std::set<expr::DerivativeKey> derivatives_of(
    const std::vector<const expr::Expression*>& expressions) {
  std::set<expr::DerivativeKey> keys;
  for (const auto* e : expressions) keys.insert(e->derivatives().begin(), e->derivatives().end());
  return keys;
}

EquationGroup::EquationGroup(std::vector<Equation> equations,
                             std::shared_ptr<const geometry::Domain> region, int64_t points,
                             geometry::SamplerKind sampler, core::Rng rng, PointOptions options,
                             std::optional<CausalWindow> causal)
    : equations_(std::move(equations)),
      sampling_{std::move(region), points, sampler, rng, options, {}},
      causal_(causal) {
  resample();
}

void EquationGroup::resample() {
  auto& s = sampling_;
  s.begin_sample();
  adapted_ = torch::Tensor();
  x_ = s.place(s.region->sample_interior(s.points, s.sampler, s.rng));
  if (causal_) chunk_ = time_chunks(x_, *causal_).to(x_.device());
}

void EquationGroup::set_adapted_points(const torch::Tensor& all) {
  adapted_ = core::read_to_host(all, torch::kFloat64);
  x_ = sampling_.place(adapted_);
  if (causal_) chunk_ = time_chunks(x_, *causal_).to(x_.device());
}

void EquationGroup::set_dtype(torch::Dtype dtype) {
  if (!sampling_.set_dtype(dtype)) return;
  if (adapted_.defined())
    set_adapted_points(adapted_);
  else
    resample_from(sampling_.origin);
}

void EquationGroup::adapt(const FieldEvaluator& fields, const ResidualSampling& rule) {
  const auto drawn = candidates(fields, rule);
  keep(drawn, residual_density(drawn.magnitude, rule), sampling_.points);
}

ResidualCandidates EquationGroup::candidates(const FieldEvaluator& fields,
                                             const ResidualSampling& rule) {
  auto& s = sampling_;
  s.begin_sample();
  const auto drawn = s.region->sample_interior(s.points * rule.candidates, s.sampler, s.rng);
  // Every candidate's summed residual magnitude over the equations, in the network's dtype.
  // In slices of the training sample's size, so the memory peak is that of a training pass.
  std::vector<torch::Tensor> magnitudes;
  torch::AutoGradMode grad_mode(true);  // the reverse engine needs it even without a graph
  for (int64_t start = 0; start < drawn.size(0); start += s.points) {
    const auto x = drawn.slice(0, start, start + s.points).to(s.options.device, s.options.dtype);
    auto sum = torch::zeros({x.size(0)}, torch::kFloat64);
    for (const auto& r : equation_residuals(equations_, fields, x, /*create_graph=*/false))
      sum += core::read_to_host(r.detach().reshape({r.size(0), -1}).abs().sum(1), torch::kFloat64);
    magnitudes.push_back(sum);
  }
  return {drawn, torch::cat(magnitudes)};
}

void EquationGroup::keep(const ResidualCandidates& candidates, const torch::Tensor& density,
                         int64_t count) {
  const auto kept = weighted_draw(density, count, sampling_.rng);
  set_adapted_points(candidates.points.index_select(0, kept));
}

std::set<expr::DerivativeKey> EquationGroup::derivatives() const {
  std::vector<const expr::Expression*> expressions;
  for (const auto& e : equations_) expressions.push_back(&e.residual);
  return derivatives_of(expressions);
}

std::vector<torch::Tensor> equation_residuals(const std::vector<Equation>& equations,
                                              const FieldEvaluator& fields, const torch::Tensor& x,
                                              bool create_graph) {
  std::vector<const expr::Expression*> expressions;
  for (const auto& e : equations) expressions.push_back(&e.residual);
  const auto env = fields.evaluate(x, derivatives_of(expressions), create_graph);
  std::vector<torch::Tensor> residuals;
  for (const auto& e : equations) residuals.push_back(e.residual.evaluate(env));
  return residuals;
}

void EquationGroup::prepare_chunks(const FieldEvaluator& fields, int chunks) const {
  if (!causal()) return;
  // The causal weights and each time chunk's point count come from every row (of every replica);
  // the parts then each add their rows' weighted squares. On the device: index_add adds in row
  // order there too (core/determinism.hpp), and nothing is read.
  const auto options = x_.options();
  std::vector<torch::Tensor> sums;
  for (std::size_t e = 0; e < equations_.size(); ++e)
    sums.push_back(torch::zeros({causal_->chunks}, options));
  torch::AutoGradMode grad_mode(true);  // the reverse engine needs it even without a graph
  for (int c = 0; c < chunks; ++c) {
    const Chunk part{c, chunks};
    const auto time_chunk = part.rows(chunk_);
    if (time_chunk.size(0) == 0) continue;
    const auto residuals = equation_residuals(equations_, fields, part.rows(x_), false);
    for (std::size_t e = 0; e < residuals.size(); ++e)
      sums[e].index_add_(0, time_chunk, residuals[e].detach().pow(2).to(options.dtype()));
  }
  // Called with no rows too: the other replicas wait for this replica's sums.
  const auto counts = chunk_counts(chunk_, causal_->chunks, x_.scalar_type());
  weighting_ = weigh(sums, counts);
}

std::vector<FieldRequest> EquationGroup::requests(const FieldEvaluator& fields,
                                                  const Chunk& chunk) const {
  return {{&fields, chunk.rows(x_), derivatives(), {}}};
}

ChunkWeighting EquationGroup::weigh(const std::vector<torch::Tensor>& sums,
                                    const torch::Tensor& counts) const {
  TESSERA_ASSERT(chunk_sum_ || sampling_.options.replica.count == 1,
                 "causal weights of a replica's own rows: its group's sums were not set up");
  return weigh_chunks(sums, counts, causal_->tolerance, chunk_sum_);
}

double EquationGroup::mean_per_share(int64_t rows) const {
  const int64_t whole = sampling_.options.replica.count > 1 ? point_count() : x_.size(0);
  return static_cast<double>(whole) / static_cast<double>(rows);
}

std::vector<torch::Tensor> EquationGroup::causal_losses(
    const std::vector<torch::Tensor>& residuals) const {
  std::vector<torch::Tensor> sums;
  for (const auto& r : residuals) sums.push_back(chunk_sums(r.pow(2), chunk_, causal_->chunks));
  // Called with no rows too: the other replicas wait for this replica's sums.
  const auto counts = chunk_counts(chunk_, causal_->chunks, x_.scalar_type());
  weighting_ = weigh(sums, counts);
  std::vector<torch::Tensor> values;
  const int64_t rows = x_.size(0);
  for (std::size_t e = 0; e < residuals.size(); ++e)
    values.push_back(rows == 0 ? mean_square(residuals[e])
                               : weighting_.loss(sums[e]) * mean_per_share(rows));
  return values;
}

std::vector<torch::Tensor> EquationGroup::causal_part_losses(
    const std::vector<torch::Tensor>& residuals, const Chunk& chunk, int64_t rows) const {
  std::vector<torch::Tensor> values;
  if (rows == 0) {
    for (const auto& r : residuals) values.push_back(mean_square(r));
    return values;
  }
  // The sum over this part's rows of w_k r^2 / (n_k K), as a mean whose share gives it back.
  const auto factors = weighting_.row_factors(chunk.rows(chunk_));
  for (const auto& r : residuals)
    values.push_back((factors * r.pow(2)).sum() * mean_per_share(rows));
  return values;
}

std::vector<TermValue> EquationGroup::terms(const std::vector<expr::Environment>& environments,
                                            const Chunk& chunk) const {
  const auto& x = environments.at(0).coordinates;
  std::vector<torch::Tensor> residuals;
  for (const auto& e : equations_) residuals.push_back(e.residual.evaluate(environments[0]));
  std::vector<torch::Tensor> values;
  if (causal() && chunk.count > 1) {
    values = causal_part_losses(residuals, chunk, x.size(0));
  } else if (causal()) {
    values = causal_losses(residuals);
  } else {
    for (const auto& r : residuals) values.push_back(mean_square(r));
  }
  std::vector<TermValue> result;
  for (std::size_t i = 0; i < equations_.size(); ++i)
    result.push_back(sampling_.options.replica.term(equations_[i].name, values[i], residuals[i],
                                                    x_.size(0), point_count(), chunk));
  return result;
}

std::vector<std::string> EquationGroup::term_names() const {
  std::vector<std::string> names;
  for (const auto& e : equations_) names.push_back(e.name);
  return names;
}

}  // namespace tessera::physics
