#include "tessera/app/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "tessera/app/budget_plan.hpp"
#include "tessera/app/model.hpp"
#include "tessera/core/memory_usage.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::app {

nlohmann::json history_json(const train::LogRecord& r) {
  nlohmann::json j = {{"iteration", r.iteration}, {"stage", r.stage},
                      {"wall_s", r.wall_s},       {"lr", r.lr},
                      {"loss", r.loss},           {"terms", r.terms}};
  if (!r.rel_l2.empty()) j["rel_l2"] = r.rel_l2;
  if (r.rel_l2_stacked >= 0) j["rel_l2_stacked"] = r.rel_l2_stacked;
  if (!r.parameters.empty()) j["parameters"] = r.parameters;
  bool adaptive = false;
  for (const auto& [name, w] : r.weights) adaptive = adaptive || w != 1.0;
  if (adaptive) j["weights"] = r.weights;
  if (r.interface_jump >= 0) j["interface_jump"] = r.interface_jump;
  j["time_s"] = r.time_s;
  if (r.final) j["final"] = true;
  return j;
}

namespace {

// What the defaults chose, read from the trainer's own plan.
// `joint_finish`: every cut is in space, so the quasi-Newton methods minimise the subdomains
// together and their inverse Hessian's layout applies (with a cut in time they run per
// subdomain).
void print_training_choices(std::ostream& out, const io::Case& c, const train::TrainingPlan& plan,
                            bool joint_finish) {
  for (std::size_t i = 0; i < plan.stages.size(); ++i) {
    const auto& s = plan.stages[i];
    const auto& spec = c.training.stages[i];
    // A budget's iteration counts, and the Adam schedule that follows from them, are known
    // once the run has timed the stages.
    const bool unplanned = c.training.budget && !c.training.planned;
    out << "    stage " << i << ": " << s.optimizer << ", ";
    if (unplanned)
      out << "iterations planned from the budget, lr ";
    else
      out << s.iterations << " iterations, lr ";
    out << s.lr << ", " << (s.dtype == torch::kFloat64 ? "float64" : "float32")
        << (spec.dtype || spec.precision ? "" : " (default)");
    if (s.products == train::Products::tf32) out << ", TF32 products";
    if (s.products == train::Products::bf16) out << ", bf16 products (reverse engine)";
    if (spec.optimizer->takes("history"))
      out << ", the last " << s.history
          << (s.broyden_updates ? " self-scaled Broyden updates"
              : s.self_scaled   ? " curvature pairs, self-scaled"
                                : " curvature pairs, classic scaling");
    if (!spec.optimizer->first_order && joint_finish)
      out << (s.joint_hessian ? ", one inverse Hessian over the subdomains cut in space"
                              : ", one inverse Hessian block per subdomain")
          << (spec.hessian ? "" : " (default)");
    if (spec.optimizer->first_order && unplanned) {
      out << ", warm-up and decay from the planned iterations (default)";
    } else if (spec.optimizer->first_order) {
      out << ", warm-up " << s.warmup << (spec.warmup ? "" : " (default)") << ", decay x"
          << s.decay_rate.value_or(1.0) << " every " << s.decay_every
          << (spec.decay ? "" : " (default)");
    }
    out << "\n";
  }
  if (plan.adaptive.enabled)
    out << "  weights: balanced every " << plan.adaptive.every << " Adam iterations (alpha "
        << plan.adaptive.alpha << "), starting from the weights above\n";
  else
    out << "  weights: fixed (training.weights.adaptive \"none\")\n";
  if (const auto& a = plan.adaptive_points)
    out << "  collocation points: redistributed by their residual every " << a->every
        << " Adam iterations (" << a->candidates << " candidates per point, exponent "
        << a->exponent << ", constant " << a->constant << ")"
        << (c.training.collocation.adaptive_given ? "" : " (default)")
        << (c.decomposition.method != io::DecompositionMethod::none && a->across_subdomains
                ? "; the subdomains' counts follow their share of the residual"
                : "")
        << "; a stage's points are drawn the same way\n";
  else if (plan.resample_every > 0)
    out << "  collocation points: redrawn uniformly every " << plan.resample_every
        << " Adam iterations (training.collocation.adaptive false"
        << (c.training.collocation.adaptive_given ? "" : ", the default with fbpinn") << ")\n";
  else
    out << "  collocation points: fixed (training.collocation.adaptive false)\n";
  const bool sampled_conditions =
      std::any_of(c.conditions.begin(), c.conditions.end(), [](const io::ConditionSpec& condition) {
        return condition.type != io::ConditionKind::data && !condition.exact;
      });
  if (plan.resample_every > 0 && sampled_conditions)
    out << "  condition points: redrawn every " << plan.resample_every << " Adam iterations\n";
  for (const auto& condition : c.conditions)
    if (condition.exact && condition.type == io::ConditionKind::periodic)
      out << "  condition " << condition.name << ": periodic in " << condition.axis
          << " by construction (the network sees cos and sin of " << condition.axis << ")\n";
    else if (condition.exact)
      out << "  condition " << condition.name << ": enforced exactly on " << condition.field
          << " (u = g + phi N)\n";
  if (causal_enabled(c))
    out << "  causal weights: " << c.training.causal.chunks << " time chunks per subdomain, "
        << "tolerance " << c.training.causal.tolerance << " (Adam stages)\n";
}

/// The overlapping subdomains of an fbpinn decomposition, level by level.
void print_windows(std::ostream& out, const Decomposition& d) {
  int64_t count = 0;
  std::string levels;
  for (const auto& level : d.windows) {
    count += level.cells();
    levels += (levels.empty() ? "" : " + ") + std::to_string(level.cells());
  }
  out << "  decomposition: fbpinn, " << count << " overlapping subdomains";
  if (d.windows.size() > 1) out << " on " << d.windows.size() << " levels (" << levels << ")";
  out << ", overlap " << d.overlap
      << " of the cell width, cosine windows summing to 1 on every level; no interfaces, the "
         "windowed sum is trained as one network";
}

}  // namespace

void print_problem_summary(std::ostream& out, const Setup& setup, const ModelSummary& model) {
  const io::Case& c = setup.input;
  const Problem& p = setup.problem;
  const Decomposition& d = setup.decomposition;
  out << "case " << c.name << " (" << c.file << ")\n";
  for (const auto& line : c.description) out << "  " << line << "\n";
  out << "  coordinates: ";
  for (const auto& n : p.domain->input_names()) out << n << " ";
  const auto box = p.domain->bounding_box();
  out << "over [";
  for (std::size_t i = 0; i < box.lo.size(); ++i)
    out << (i ? " x " : "") << box.lo[i] << ", " << box.hi[i];
  out << "]\n";
  const auto& shape = p.domain->shape();
  const char* measure_name[] = {"length", "area", "volume"};
  out << "  geometry: " << io::name(c.geometry.kind) << ", "
      << (shape.dims() <= 3 ? measure_name[shape.dims() - 1] : "measure") << " " << shape.measure()
      << ", " << shape.boundary_parts().size() << " boundary part(s)\n";
  out << "  fields: ";
  for (const auto& f : p.symbols.fields) out << f << " ";
  out << "\n  derivatives needed: ";
  for (const auto& name : model.derivatives) out << name << " ";
  out << "\n  loss terms (weight; points per resample in subdomain 0):\n";
  for (const auto& name : p.term_names) {
    auto it = model.points.find(name);
    out << "    " << name << ": weight " << p.weights.at(name) << ", "
        << (it == model.points.end() ? 0 : it->second) << " points\n";
  }
  if (d.method == io::DecompositionMethod::fbpinn)
    print_windows(out, d);
  else
    out << "  decomposition: " << io::name(d.method) << ", " << d.partition.size()
        << " subdomain(s), " << d.partition.interfaces().size() << " interface(s)";
  if (!d.partition.interfaces().empty()) {
    out << " with " << d.interface_points << " points each";
    if (c.training.collocation.resample_every > 0)
      out << ", redrawn every " << c.training.collocation.resample_every << " Adam iterations";
  }
  out << "\n";
  for (const auto& s : d.partition.subdomains()) {
    if (d.partition.size() == 1) break;
    out << "    subdomain " << s.id << " on rank " << d.rank_of[s.id];
    if (d.replicas > 1) out << ".." << d.rank_of[s.id] + d.replicas - 1 << " (replicas)";
    out << ": [";
    for (std::size_t i = 0; i < s.box.lo.size(); ++i)
      out << (i ? " x " : "") << s.box.lo[i] << ", " << s.box.hi[i];
    out << "]\n";
  }
  out << "  network: " << io::name(c.network.activation);
  const std::size_t whole = p.symbols.fields.size() - c.field_inputs.size();
  if (whole > 0) {
    out << " [" << p.domain->dims();
    for (auto h : c.network.hidden) out << ", " << h;
    out << ", " << whole << "]";
  }
  // The fields of some inputs, each with its own network.
  const char* joiner = whole > 0 ? " + " : " ";
  for (const auto& [field, spec] : c.field_inputs) {
    out << joiner << field << "(";
    joiner = " + ";
    for (std::size_t k = 0; k < spec.of.size(); ++k) out << (k ? ", " : "") << spec.of[k];
    out << "): [" << spec.of.size();
    for (auto h : spec.hidden.value_or(c.network.hidden)) out << ", " << h;
    out << ", 1]";
  }
  out << ", " << model.parameters
      << (d.windows.empty() ? " trainable parameters per subdomain, "
                            : " trainable parameters in all subdomains, ")
      << io::name(c.dtype) << " on " << p.device
      << (c.network.architecture == io::ArchitectureChoice::modified_mlp ? ", modified MLP" : "")
      << (c.network.weight_factorization ? ", weight factorisation" : "") << "\n";
  int64_t iterations = 0;
  for (const auto& s : c.training.stages) iterations += s.iterations;
  out << "  training: " << c.training.stages.size() << " stage(s), ";
  if (c.training.budget && !c.training.planned)
    out << "planned for a budget of " << *c.training.budget << " s";
  else
    out << iterations << " iterations";
  out << "; derivatives: "
      << (c.training.derivatives == io::DerivativeChoice::autograd ? "reverse-mode autograd"
          : c.training.derivatives == io::DerivativeChoice::taylor
              ? "forward Taylor engine"
              : "auto (forward Taylor engine up to second order, else autograd)")
      << "\n";
  bool cut_in_space = false, cut_in_time = false;
  for (const auto& cut : d.partition.interfaces())
    (cut.axis >= p.domain->spatial_dims() ? cut_in_time : cut_in_space) = true;
  if (c.training.budget && !c.training.planned)
    out << "  plan: training.budget " << *c.training.budget
        << " s of training: " << static_cast<int>(budget_adam_share * 100)
        << " % for Adam, the rest for " << setup.plan.stages.back().optimizer
        << "; the run first times a few iterations of each on this job (on a copy of the "
           "networks) and fixes Adam's iterations for "
        << static_cast<int>(std::lround(budget_margin * 100))
        << " % of its share (the rest for logging, balancing and redraws), then trains the "
           "finish until the budget ends; run.json and the checkpoints record the plan\n";
  print_training_choices(out, c, setup.plan, cut_in_space && !cut_in_time);
  if (setup.plan.batch_points > 0) {
    const int64_t largest = model.largest_set;
    const int64_t batch = setup.plan.batch_points;
    out << "  gradient accumulation: at most " << batch << " points of a set per part, "
        << std::max<int64_t>(1, (largest + batch - 1) / batch)
        << " part(s) per pass in subdomain 0\n";
  }
  if (!p.exact.empty()) out << "  exact solution given: relative L2 error reported\n";
  if (d.slices > 0)
    out << "  slices: every point set cut into " << d.slices << ", shared by " << d.replicas
        << " rank(s) in whole slices; sums taken slice by slice, so any rank count up to "
        << d.slices << " gives the same bits\n";
  else if (d.replicas > 1)
    out << "  data-parallel: " << d.replicas
        << " ranks per subdomain, gradients summed every step\n";
  for (const auto& parameter : p.parameters)
    out << "  trainable parameter " << parameter.name << ": initial " << parameter.initial
        << (parameter.positive ? " (positive)" : "") << ", shared by every subdomain\n";
  if (p.reference) out << "  reference: " << *c.reference_file << "\n";
  out << std::flush;
}

void print_timing_table(const parallel::Communicator& comm, const train::LogRecord& record,
                        std::ostream& out) {
  const std::vector<std::string> phases{"compute", "exchange", "wait", "sync"};
  std::vector<double> low, high, sum;
  for (const auto& phase : phases) {
    auto it = record.time_s.find(phase);
    const double t = it == record.time_s.end() ? 0.0 : it->second;
    low.push_back(-t);  // min as max of negatives
    high.push_back(t);
    sum.push_back(t);
  }
  comm.max_in_place(low);
  comm.max_in_place(high);
  comm.sum_in_place(sum);
  char line[160];
  std::snprintf(line, sizeof line,
                "time per phase over %d rank(s), seconds:   min      mean       max\n",
                comm.size());
  out << line;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    std::snprintf(line, sizeof line, "  %-8s                         %9.3f %9.3f %9.3f\n",
                  phases[i].c_str(), -low[i], sum[i] / comm.size(), high[i]);
    out << line;
  }
  // The resident high-water mark since training started, per rank, and of it what training
  // added to the resident size at its start (libraries and set-up).
  constexpr double mib = 1024.0 * 1024.0;
  const double peak = core::peak_memory_bytes() / mib;
  const double added = std::max(0.0, peak - core::memory_at_reset_bytes() / mib);
  std::vector<double> high_peak{peak, added}, low_peak{-peak, -added}, sum_peak{peak, added};
  comm.max_in_place(high_peak);
  comm.max_in_place(low_peak);
  comm.sum_in_place(sum_peak);
  const char* labels[] = {"peak memory per rank, MiB:              ",
                          "  of it added by training:             "};
  for (int i = 0; i < 2; ++i) {
    std::snprintf(line, sizeof line, "%s%9.1f %9.1f %9.1f\n", labels[i], -low_peak[i],
                  sum_peak[i] / comm.size(), high_peak[i]);
    out << line;
  }
  out << std::flush;
}

void ProgressPrinter::print(const train::LogRecord& r) {
  const double dt = r.wall_s - last_wall_;
  const double rate = dt > 0 ? static_cast<double>(r.iteration - last_iteration_) / dt : 0.0;
  last_wall_ = r.wall_s;
  last_iteration_ = r.iteration;
  char line[256];
  std::snprintf(line, sizeof line, "[%7lld/%lld] %-5s loss %.3e",
                static_cast<long long>(r.iteration), static_cast<long long>(r.total_iterations),
                r.stage.c_str(), r.loss);
  out_ << line;
  for (const auto& [field, error] : r.rel_l2) {
    std::snprintf(line, sizeof line, "  rel_l2(%s) %.3e", field.c_str(), error);
    out_ << line;
  }
  if (r.rel_l2_stacked >= 0) {
    std::snprintf(line, sizeof line, "  rel_l2(stacked) %.3e", r.rel_l2_stacked);
    out_ << line;
  }
  for (const auto& [name, value] : r.parameters) {
    std::snprintf(line, sizeof line, "  %s %.6g", name.c_str(), value);
    out_ << line;
  }
  if (r.final) {
    std::snprintf(line, sizeof line, "  done in %.1f s\n", r.wall_s);
  } else {
    double eta = rate > 0 ? static_cast<double>(r.total_iterations - r.iteration) / rate : 0.0;
    if (budget_s_) eta = std::min(eta, std::max(0.0, *budget_s_ - r.wall_s));
    std::snprintf(line, sizeof line, "  %.0f it/s  ETA %.0f s\n", rate, eta);
  }
  out_ << line << std::flush;
}

void warn_partial_interfaces(const Console& console, const Setup& setup) {
  const auto& partition = setup.decomposition.partition;
  for (const auto& coverage : setup.decomposition.partial_interfaces) {
    const auto& f = partition.interfaces().at(static_cast<std::size_t>(coverage.interface));
    char share[16];
    std::snprintf(share, sizeof share, "%.0f %%", 100.0 * coverage.inside);
    std::ostringstream text;
    text << setup.input.file << ": decomposition: interface " << f.id << " ("
         << partition.names().at(static_cast<std::size_t>(f.axis)) << " = " << f.position
         << ", subdomains " << f.lower << " and " << f.upper << ") has the domain on both sides "
         << "over " << share << " of its facet; the rest runs along a wall or outside the "
         << "domain, where no interface points are drawn; cut elsewhere if the subdomains "
         << "should meet across more of it";
    console.warning(text.str());
  }
}

}  // namespace tessera::app
