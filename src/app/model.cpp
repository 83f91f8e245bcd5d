#include "tessera/app/model.hpp"

#include <algorithm>
#include <map>

#include "tessera/app/field_networks.hpp"
#include "tessera/app/memory_estimate.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/data_group.hpp"
#include "tessera/train/quasi_newton.hpp"

#include "derivative_engine.hpp"

namespace tessera::app {

namespace {

nn::Activation activation_of(io::ActivationChoice choice) {
  switch (choice) {
    case io::ActivationChoice::tanh:
      return nn::Activation::tanh;
    case io::ActivationChoice::sin:
      return nn::Activation::sin;
    case io::ActivationChoice::gelu:
      return nn::Activation::gelu;
    case io::ActivationChoice::silu:
      return nn::Activation::silu;
  }
  TESSERA_UNREACHABLE("activation " << static_cast<int>(choice));
}

}  // namespace

namespace {

// The inputs of periodic conditions enforced exactly. The embedding makes the network periodic
// over its own box, which spans the domain along that axis.
std::vector<int> periodic_inputs(const io::Case& c, const Problem& p, const geometry::Box& box,
                                 const io::NetworkSpec& network) {
  std::vector<int> inputs;
  const auto whole = p.domain->bounding_box();
  for (std::size_t k = 0; k < c.conditions.size(); ++k) {
    const auto& condition = c.conditions[k];
    if (condition.type != io::ConditionKind::periodic || !condition.exact) continue;
    const std::string key = c.file + ": conditions[" + std::to_string(k) + "].enforce";
    const int axis = p.domain->axis_index(condition.axis);
    const auto a = static_cast<std::size_t>(axis);
    // A periodic axis is never cut (the decomposition refuses it), so every box spans it.
    TESSERA_ASSERT(box.lo[a] == whole.lo[a] && box.hi[a] == whole.hi[a],
                   "a subdomain does not span the periodic axis " << condition.axis);
    TESSERA_CHECK(!network.fourier_features,
                  key << ": \"exact\" periodicity feeds cos and sin of " << condition.axis
                      << " to the network and cannot be combined with network.fourier_features; "
                         "remove one of them");
    inputs.push_back(axis);
  }
  return inputs;
}

}  // namespace

bool periodic_by_construction(const io::Case& c, const Problem& p, const std::string& condition,
                              const nn::Network& network) {
  // Only MLPs have periodic inputs; with fields of some inputs, every network that reads the
  // axis must take it periodically.
  std::vector<std::pair<const nn::MlpImpl*, std::vector<int>>> mlps;  // (network, its inputs)
  if (const auto* mlp = dynamic_cast<const nn::MlpImpl*>(&network)) {
    std::vector<int> every(static_cast<std::size_t>(p.domain->dims()));
    for (std::size_t k = 0; k < every.size(); ++k) every[k] = static_cast<int>(k);
    mlps.push_back({mlp, every});
  }
  if (const auto* parts = dynamic_cast<const nn::FieldNetworksImpl*>(&network))
    for (std::size_t k = 0; k < parts->parts().size(); ++k)
      mlps.push_back({parts->network(k).get(), parts->parts()[k].inputs});
  for (const auto& spec : c.conditions) {
    if (spec.name != condition || spec.type != io::ConditionKind::periodic) continue;
    const int axis = p.domain->axis_index(spec.axis);
    bool periodic = !mlps.empty();
    for (const auto& [mlp, inputs] : mlps) {
      const auto at = std::find(inputs.begin(), inputs.end(), axis);
      periodic = periodic && (at == inputs.end() || mlp->is_periodic(at - inputs.begin()));
    }
    return periodic;
  }
  return false;
}

nn::MlpOptions network_options(const io::Case& c, const Problem& p, int id,
                               const geometry::Box& box) {
  io::NetworkSpec spec = c.network;
  auto override = c.subdomains.find(id);
  if (override != c.subdomains.end() && override->second.network) spec = *override->second.network;
  nn::MlpOptions o;
  o.inputs = p.domain->dims();
  o.outputs = static_cast<int64_t>(c.fields.size());
  o.hidden = spec.hidden;
  o.modified = spec.architecture == io::ArchitectureChoice::modified_mlp;
  o.activation = activation_of(spec.activation);
  o.adaptive_scale = spec.adaptive_scale;
  if (spec.fourier_features) {
    o.fourier_count = spec.fourier_features->first;
    o.fourier_scale = spec.fourier_features->second;
  }
  o.weight_factorization = spec.weight_factorization;
  o.xavier_uniform = spec.init == io::InitChoice::xavier_uniform;
  o.lower = box.lo;
  o.upper = box.hi;
  o.periodic_inputs = periodic_inputs(c, p, box, spec);
  o.seed = c.seed;
  o.subdomain = id;
  return o;
}

nn::FbpinnOptions fbpinn_options(const io::Case& c, const Problem& p, const Decomposition& d) {
  nn::FbpinnOptions o;
  o.inputs = p.domain->dims();
  o.outputs = static_cast<int64_t>(c.fields.size());
  o.hidden = c.network.hidden;
  o.activation = activation_of(c.network.activation);
  o.xavier_uniform = c.network.init == io::InitChoice::xavier_uniform;
  o.levels = d.windows;
  o.overlap = d.overlap;
  o.seed = c.seed;
  return o;
}

bool causal_enabled(const io::Case& c) {
  // The same with or without replicas, so a run keeps one objective on any rank count: the
  // replicas of a subdomain weigh its time chunks by the sums over their group.
  return c.time && c.training.causal.enabled.value_or(true);
}

std::optional<physics::CausalWindow> causal_window(const io::Case& c,
                                                   const geometry::Domain& region) {
  if (!causal_enabled(c)) return std::nullopt;
  // The subdomain's own time range: a later time slab opens its chunks from its lower
  // interface, where the continuity terms carry the earlier slab's solution in.
  const auto box = region.bounding_box();
  const int column = region.dims() - 1;
  return physics::CausalWindow{c.training.causal.chunks, c.training.causal.tolerance, column,
                               box.lo[column], box.hi[column]};
}

int64_t default_warmup(int64_t iterations) { return std::min<int64_t>(1000, iterations / 20); }

int64_t default_decay_every(int64_t iterations) { return std::max<int64_t>(1, iterations / 20); }

namespace {

/// The exactly enforced conditions grouped by field (null: none).
std::shared_ptr<const physics::ExactConditions> exact_conditions(const Problem& p) {
  std::map<int, physics::ExactField> fields;
  for (const auto& plan : p.conditions)
    if (plan.exact) {
      auto& field = fields[plan.pointwise->field];
      field.field = plan.pointwise->field;
      field.pieces.push_back(*plan.exact);
    }
  if (fields.empty()) return nullptr;
  std::vector<physics::ExactField> list;
  for (auto& [index, field] : fields) list.push_back(std::move(field));
  return std::make_shared<const physics::ExactConditions>(std::move(list));
}

}  // namespace

std::unique_ptr<train::SubdomainModel> build_subdomain(
    const io::Case& c, const Problem& p, const Decomposition& d, int id, physics::Replica replica,
    std::shared_ptr<const physics::SharedParameters> parameters) {
  const auto region = subdomain_region(p, d.partition.subdomains().at(id));
  auto model = std::make_unique<train::SubdomainModel>();
  model->id = id;
  std::shared_ptr<nn::FbpinnImpl> windowed_sum;
  if (d.method == io::DecompositionMethod::fbpinn) {
    nn::Fbpinn network(fbpinn_options(c, p, d));
    network->to(p.device, p.dtype);
    model->network = windowed_sum = network.ptr();
    model->fields = std::make_unique<physics::FieldEvaluator>(
        [network](const torch::Tensor& x) mutable { return network->forward(x); },
        detail::derivative_engine(c, network), std::move(parameters));
  } else if (has_field_networks(c)) {
    nn::FieldNetworks network =
        field_networks(c, network_options(c, p, id, region->bounding_box()));
    network->to(p.device, p.dtype);
    model->network = network.ptr();
    model->fields = std::make_unique<physics::FieldEvaluator>(
        [network](const torch::Tensor& x) mutable { return network->forward(x); },
        field_networks_engine(c, network), std::move(parameters));
  } else {
    nn::Mlp network(network_options(c, p, id, region->bounding_box()));
    network->to(p.device, p.dtype);
    model->network = network.ptr();
    model->fields = std::make_unique<physics::FieldEvaluator>(
        [network](const torch::Tensor& x) mutable { return network->forward(x); },
        detail::derivative_engine(c, network), std::move(parameters));
    // The forward engine can evaluate it together with the rank's other subdomains.
    if (c.training.derivatives != io::DerivativeChoice::autograd)
      model->fields->set_groupable(network);
  }
  if (auto exact = exact_conditions(p)) model->fields->set_exact(std::move(exact));

  const physics::PointOptions points{p.dtype, p.device, replica};
  const auto sampler = p.sampler;
  int64_t collocation = c.training.collocation.points;
  auto override = c.subdomains.find(id);
  if (override != c.subdomains.end() && override->second.collocation_points)
    collocation = *override->second.collocation_points;
  model->groups.push_back(std::make_unique<physics::EquationGroup>(
      p.equations, region, collocation, sampler, core::Rng(c.seed, id, "collocation"), points,
      causal_window(c, *region)));
  for (const auto& plan : p.conditions) {
    core::Rng rng(c.seed, id, "condition:" + plan.name);
    if (plan.data) {
      // The observations inside this subdomain (a point on a cut belongs to one side only).
      const auto mine = (d.partition.subdomain_of(plan.data->points) == id).nonzero().view(-1);
      if (mine.numel() == 0) continue;
      if (plan.data->condition) {
        model->groups.push_back(std::make_unique<physics::DataGroup>(
            *plan.data->condition, plan.data->points.index_select(0, mine), points));
        continue;
      }
      model->groups.push_back(std::make_unique<physics::DataGroup>(
          plan.name, plan.data->fields, plan.data->points.index_select(0, mine),
          plan.data->values.index_select(0, mine), points));
    } else if (plan.periodic_faces) {
      // A periodicity the network holds by construction has no term: its residual is rounding
      // noise, whose gradient would only mislead the balancing of the weights.
      if (periodic_by_construction(c, p, plan.name, *model->network)) continue;
      model->groups.push_back(std::make_unique<physics::PeriodicGroup>(
          plan.name, *plan.periodic_faces, static_cast<int>(c.fields.size()), region, plan.points,
          sampler, rng, points));
    } else if (auto on = restrict_selector(*p.domain, plan.pointwise->on, *region)) {
      physics::Condition condition = *plan.pointwise;
      condition.on = *on;
      model->groups.push_back(std::make_unique<physics::ConditionGroup>(
          condition, region, plan.points, sampler, rng, points));
    }
  }
  model->interfaces = interface_sides(c, p, d, id, replica);
  if (windowed_sum) {
    // A step evaluates every group's points (a periodic group's two faces) in this rank's
    // slices; a few more for the error and output grids.
    const int slices_here = (d.slices + d.replicas - 1) / d.replicas;
    windowed_sum->keep_plans(2 * model->groups.size() * static_cast<std::size_t>(slices_here) + 4);
  }
  return model;
}

torch::Dtype stage_dtype(const io::StageSpec& stage, const Problem& p) {
  if (stage.precision)
    return *stage.precision == io::Precision::fp64 ? torch::kFloat64 : torch::kFloat32;
  if (stage.dtype)
    return *stage.dtype == io::FloatType::float64 ? torch::kFloat64 : torch::kFloat32;
  return stage.optimizer->float64 ? torch::kFloat64 : p.dtype;
}

std::string stage_precision(const io::StageSpec& stage, const Problem& p) {
  if (stage.precision) return io::name(*stage.precision);
  return stage_dtype(stage, p) == torch::kFloat64 ? "fp64" : "fp32";
}

NetworkSizes network_sizes(const io::Case& c, const Problem& p, const Decomposition& d) {
  // Parameter counts of every subdomain's network: those without their own network have
  // subdomain 0's.
  const auto count = [&](int id) {
    const auto region = subdomain_region(p, d.partition.subdomains().at(id));
    std::shared_ptr<nn::Network> network;
    if (d.method == io::DecompositionMethod::fbpinn)
      network = nn::Fbpinn(fbpinn_options(c, p, d)).ptr();
    else if (has_field_networks(c))
      network = field_networks(c, network_options(c, p, id, region->bounding_box())).ptr();
    else
      network = nn::Mlp(network_options(c, p, id, region->bounding_box())).ptr();
    int64_t n = 0;
    for (const auto& t : network->parameters()) n += t.numel();
    return n;
  };
  std::map<int, int64_t> own;  // subdomain -> its count, where it has its own network
  for (const auto& [id, override] : c.subdomains)
    if (override.network && id < d.partition.size()) own[id] = count(id);
  const int64_t shared = count(0);
  NetworkSizes sizes;
  for (int id = 0; id < d.partition.size(); ++id) {
    const int64_t n = own.count(id) ? own.at(id) : shared;
    sizes.total += n;
    if (n > sizes.largest) sizes.largest = n, sizes.largest_id = id;
  }
  return sizes;
}

void choose_planned_finish(io::Case& c, const Problem& p, const Decomposition& d) {
  if (!c.training.budget) return;
  const double block = train::QuasiNewton::hessian_bytes(network_sizes(c, p, d).largest);
  if (block > dense_hessian_limit_bytes)
    c.training.stages.back().optimizer = io::find_optimizer("lbfgs");
}

void plan_dense_hessians(const io::Case& c, const Problem& p, const Decomposition& d,
                         train::TrainingPlan& plan) {
  const auto [total, largest, largest_id] = network_sizes(c, p, d);
  const auto gib = [](double bytes) { return bytes / (1024.0 * 1024 * 1024); };
  for (std::size_t k = 0; k < c.training.stages.size(); ++k) {
    const auto& stage = c.training.stages[k];
    if (!stage.optimizer->dense_hessian) {
      // Curvature pairs over all subdomains cost what each subdomain's own would: joint unless
      // the stage asks for blocks. Broyden updates are kept per subdomain.
      const bool broyden = stage.scaling == io::HistoryScaling::broyden;
      TESSERA_CHECK(!broyden || stage.hessian != io::HessianLayout::joint,
                    c.file << ": " << stage.key
                           << ".hessian: \"joint\" does not go with \"scaling\": \"broyden\", "
                              "whose updates each subdomain keeps for its own parameters; give "
                              "\"blocks\" or leave \"hessian\" out");
      plan.stages.at(k).joint_hessian =
          !broyden && (!stage.hessian || *stage.hessian == io::HessianLayout::joint);
      continue;
    }
    const double block = train::QuasiNewton::hessian_bytes(largest);
    TESSERA_CHECK(block <= dense_hessian_limit_bytes,
                  c.file << ": " << stage.key << ".optimizer: \"" << stage.optimizer->name
                         << "\" keeps a dense inverse Hessian of " << largest << "^2 doubles ("
                         << gib(block) << " GiB) for subdomain " << largest_id
                         << "'s network, above the limit of " << gib(dense_hessian_limit_bytes)
                         << " GiB; use \"lbfgs\" with \"scaling\": \"broyden\" (the "
                            "method's last 1000 updates kept whole: no size limit, within 2.4x "
                            "of the dense finish on the validation suite's problems without a "
                            "split in space: "
                            "docs/validation.md, \"With the L-BFGS finish\"), or split the "
                            "domain into more subdomains (each keeps its own smaller matrix)");
    // The joint matrix gives each subdomain the rows of its parameters over all columns.
    const double rows = 8.0 * static_cast<double>(largest) * static_cast<double>(total);
    const bool fits = rows <= dense_hessian_limit_bytes;
    if (stage.hessian == io::HessianLayout::joint)
      TESSERA_CHECK(fits, c.file << ": " << stage.key << ".hessian: \"joint\" gives subdomain "
                                 << largest_id << " " << largest << " x " << total
                                 << " doubles of the inverse Hessian (" << gib(rows)
                                 << " GiB), above the limit of " << gib(dense_hessian_limit_bytes)
                                 << " GiB; use \"blocks\" or smaller networks");
    plan.stages.at(k).joint_hessian =
        stage.hessian ? *stage.hessian == io::HessianLayout::joint : fits;
  }
}

train::TrainingPlan training_plan(const io::Case& c, const Problem& p) {
  train::TrainingPlan plan;
  for (const auto& s : c.training.stages) {
    train::StagePlan stage;
    stage.optimizer = s.optimizer->name;
    stage.dtype = stage_dtype(s, p);
    stage.products = s.precision == io::Precision::tf32   ? train::Products::tf32
                     : s.precision == io::Precision::bf16 ? train::Products::bf16
                                                          : train::Products::dtype;
    TESSERA_CHECK(stage.products != train::Products::tf32 || p.device.is_cuda(),
                  c.file << ": " << s.key
                         << ".precision: \"tf32\" (TF32 matrix products) needs a CUDA device; "
                            "this run trains on "
                         << p.device << ": use \"fp32\", or \"bf16\" for mixed precision");
    stage.iterations = s.iterations;
    stage.lr = s.lr;
    if (s.optimizer->first_order) {
      stage.decay_rate = s.decay ? s.decay->rate : default_decay_rate;
      stage.decay_every = s.decay ? s.decay->every : default_decay_every(s.iterations);
      stage.warmup = s.warmup.value_or(default_warmup(s.iterations));
    }
    stage.clip = s.clip;
    stage.history = s.history;
    stage.self_scaled = s.optimizer->takes("scaling") && s.scaling == io::HistoryScaling::self;
    stage.broyden_updates =
        s.optimizer->takes("scaling") && s.scaling == io::HistoryScaling::broyden;
    stage.tolerance = s.tolerance;
    stage.points = s.collocation_points;
    plan.stages.push_back(stage);
  }
  plan.log_every = c.training.log_every;
  plan.resample_every = c.training.collocation.resample_every;
  if (const auto& a = c.training.collocation.adaptive)
    plan.adaptive_points = physics::ResidualSampling{a->every, a->candidates, a->exponent,
                                                     a->constant, a->across_subdomains};
  plan.weights = p.weights;
  plan.adaptive.enabled = c.training.weights.adaptive == io::WeightBalancing::grad_norm;
  plan.adaptive.every = c.training.weights.adaptive_every;
  plan.adaptive.alpha = c.training.weights.adaptive_alpha;
  plan.time_limit = c.training.time_limit;
  plan.checkpoint_every = c.training.checkpoint_every;
  plan.batch_points = batch_points(c);
  return plan;
}

}  // namespace tessera::app
