#include "tessera/app/progress.hpp"

#include <cstdio>
#include <iostream>
#include <set>

#include "tessera/core/torch_pch.hpp"

namespace tessera::app {

nlohmann::json history_json(const train::LogRecord& r) {
  nlohmann::json j = {{"iteration", r.iteration}, {"stage", r.stage}, {"wall_s", r.wall_s},
                      {"lr", r.lr},               {"loss", r.loss},   {"terms", r.terms}};
  if (!r.rel_l2.empty()) j["rel_l2"] = r.rel_l2;
  if (!r.parameters.empty()) j["parameters"] = r.parameters;
  bool adaptive = false;
  for (const auto& [name, w] : r.weights) adaptive = adaptive || w != 1.0;
  if (adaptive) j["weights"] = r.weights;
  j["time_s"] = r.time_s;
  if (r.final) j["final"] = true;
  return j;
}

void print_problem_summary(std::ostream& out, const io::Case& c, const Problem& p,
                           const std::vector<train::SubdomainModel*>& models) {
  out << "case " << c.name << " (" << c.file << ")\n";
  out << "  coordinates: ";
  for (const auto& n : p.domain->input_names()) out << n << " ";
  const auto box = p.domain->bounding_box();
  out << "over [";
  for (std::size_t i = 0; i < box.lo.size(); ++i)
    out << (i ? " x " : "") << box.lo[i] << ", " << box.hi[i];
  out << "]\n  fields: ";
  for (const auto& f : p.symbols.fields) out << f << " ";
  std::set<expr::DerivativeKey> derivatives;
  int64_t parameters = 0;
  for (auto* m : models) {
    for (const auto& g : m->groups) {
      auto d = g->derivatives();
      derivatives.insert(d.begin(), d.end());
    }
    for (const auto& t : m->network->parameters()) parameters += t.numel();
  }
  out << "\n  derivatives needed: ";
  for (const auto& d : derivatives) out << expr::derivative_name(d, p.symbols) << " ";
  out << "\n  loss terms (points per resample, weight):\n";
  for (auto* m : models)
    for (const auto& g : m->groups)
      for (const auto& name : g->term_names())
        out << "    " << name << ": " << g->point_count() << " points, weight " << p.weights.at(name)
            << "\n";
  out << "  network: " << c.network.activation << " [" << p.domain->dims();
  for (auto h : c.network.hidden) out << ", " << h;
  out << ", " << p.symbols.fields.size() << "], " << parameters << " trainable parameters, "
      << c.dtype << " on " << p.device << "\n";
  int64_t iterations = 0;
  for (const auto& s : c.training.stages) iterations += s.iterations;
  out << "  training: " << c.training.stages.size() << " stage(s), " << iterations
      << " iterations; derivatives: reverse-mode autograd\n";
  if (!p.exact.empty()) out << "  exact solution given: relative L2 error reported\n";
  if (p.reference) out << "  reference: " << *c.reference_file << "\n";
  out << std::flush;
}

void ProgressPrinter::print(const train::LogRecord& r) {
  if (!enabled_) return;
  const double dt = r.wall_s - last_wall_;
  const double rate = dt > 0 ? static_cast<double>(r.iteration - last_iteration_) / dt : 0.0;
  last_wall_ = r.wall_s;
  last_iteration_ = r.iteration;
  char line[256];
  std::snprintf(line, sizeof line, "[%7lld/%lld] %-5s loss %.3e", static_cast<long long>(r.iteration),
                static_cast<long long>(r.total_iterations), r.stage.c_str(), r.loss);
  std::cout << line;
  for (const auto& [field, error] : r.rel_l2) {
    std::snprintf(line, sizeof line, "  rel_l2(%s) %.3e", field.c_str(), error);
    std::cout << line;
  }
  if (r.final) {
    std::snprintf(line, sizeof line, "  done in %.1f s\n", r.wall_s);
  } else {
    const double eta = rate > 0 ? static_cast<double>(r.total_iterations - r.iteration) / rate : 0.0;
    std::snprintf(line, sizeof line, "  %.0f it/s  ETA %.0f s\n", rate, eta);
  }
  std::cout << line << std::flush;
}

}  // namespace tessera::app
