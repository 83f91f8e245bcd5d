#include "tessera/app/model.hpp"

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::app {

nn::MlpOptions network_options(const io::Case& c, const Problem& p, int id,
                               const geometry::Box& box) {
  io::NetworkSpec spec = c.network;
  auto override = c.subdomains.find(id);
  if (override != c.subdomains.end() && override->second.network)
    spec = *override->second.network;
  nn::MlpOptions o;
  o.inputs = p.domain->dims();
  o.outputs = static_cast<int64_t>(c.fields.size());
  o.hidden = spec.hidden;
  o.activation = nn::parse_activation(spec.activation, "network.activation");
  o.adaptive_scale = spec.adaptive_scale;
  if (spec.fourier_features) {
    o.fourier_count = spec.fourier_features->first;
    o.fourier_scale = spec.fourier_features->second;
  }
  o.xavier_uniform = spec.init == "xavier_uniform";
  o.lower = box.lo;
  o.upper = box.hi;
  o.seed = c.seed;
  o.subdomain = id;
  return o;
}

namespace {

physics::DerivativeEngine derivative_engine(const io::Case& c) {
  TESSERA_CHECK(c.training.derivatives != "taylor",
                c.file << ": training.derivatives: the \"taylor\" engine is not available in this "
                          "version; use \"auto\" or \"autograd\"");
  return autodiff::reverse_partials;
}

}  // namespace

std::unique_ptr<train::SubdomainModel> build_subdomain(const io::Case& c, const Problem& p,
                                                       const Decomposition& d, int id) {
  const auto region = subdomain_region(p, d.partition.subdomains().at(id));
  auto model = std::make_unique<train::SubdomainModel>();
  model->id = id;
  model->network = nn::Mlp(network_options(c, p, id, region->bounding_box()));
  model->network->to(p.device, p.dtype);
  auto network = model->network;
  model->fields = std::make_unique<physics::FieldEvaluator>(
      [network](const torch::Tensor& x) mutable { return network->forward(x); },
      derivative_engine(c), std::map<std::string, torch::Tensor>{});

  const physics::PointOptions points{p.dtype, p.device};
  const auto sampler = geometry::parse_sampler(c.training.collocation.sampler,
                                               "training.collocation.sampler");
  int64_t collocation = c.training.collocation.points;
  auto override = c.subdomains.find(id);
  if (override != c.subdomains.end() && override->second.collocation_points)
    collocation = *override->second.collocation_points;
  model->groups.push_back(std::make_unique<physics::EquationGroup>(
      p.equations, region, collocation, sampler, core::Rng(c.seed, id, "collocation"), points));
  for (const auto& plan : p.conditions) {
    core::Rng rng(c.seed, id, "condition:" + plan.name);
    if (plan.periodic_faces) {
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
  model->interfaces = interface_sides(c, p, d, id);
  return model;
}

train::TrainingPlan training_plan(const io::Case& c, const Problem& p) {
  train::TrainingPlan plan;
  for (const auto& s : c.training.stages) {
    train::StagePlan stage;
    stage.optimizer = s.optimizer == "lbfgs" ? train::OptimizerKind::lbfgs : train::OptimizerKind::adam;
    stage.iterations = s.iterations;
    stage.lr = s.lr;
    if (s.decay) {
      stage.decay_rate = s.decay->rate;
      stage.decay_every = s.decay->every;
    }
    stage.clip = s.clip;
    stage.history = s.history;
    stage.tolerance = s.tolerance;
    stage.points = s.collocation_points;
    plan.stages.push_back(stage);
  }
  plan.log_every = c.training.log_every;
  plan.resample_every = c.training.collocation.resample_every;
  plan.weights = p.weights;
  plan.adaptive.enabled = c.training.weights.adaptive == "grad_norm";
  plan.adaptive.every = c.training.weights.adaptive_every;
  plan.adaptive.alpha = c.training.weights.adaptive_alpha;
  plan.time_limit = c.training.time_limit;
  return plan;
}

}  // namespace tessera::app
