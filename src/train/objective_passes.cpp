// The passes of the objective: the neighbour exchange overlapping the interior work, whole
// subdomains evaluated together, subdomains in parts backpropagated part by part.
#include <chrono>
#include <thread>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/objective.hpp"

namespace tessera::train {
namespace {

double value_of(const LocalLoss& loss) {
  return loss.total.defined() ? core::read_double(loss.total) : 0.0;
}

}  // namespace

void backpropagate_rest(const LocalLoss& loss) {
  if (loss.total.defined() && loss.total.requires_grad()) loss.total.backward();
}

Parts Objective::parts_of(const SubdomainModel& model) const {
  int64_t largest = 0;
  for (const auto& group : model.groups) largest = std::max(largest, group->point_count());
  for (const auto& side : model.interfaces) largest = std::max(largest, side->point_count());
  return reduction_.parts(largest, batch_points_);
}

void Objective::add_terms(LocalLoss& loss, const SubdomainModel& model,
                          const std::vector<physics::TermValue>& terms) const {
  for (const auto& term : terms) {
    TESSERA_ASSERT(weights_.count(term.name), "unknown loss term '" << term.name << "'");
    loss.add(term, model.id, weights_.at(term.name));
  }
}

LocalLoss Objective::group_terms(const SubdomainModel& model, bool create_graph,
                                 const physics::Chunk& chunk) const {
  LocalLoss loss;
  for (const auto& group : model.groups)
    add_terms(loss, model, group->evaluate(*model.fields, create_graph, chunk));
  return loss;
}

std::vector<LocalLoss> Objective::group_terms_together(const std::vector<SubdomainModel*>& models,
                                                       bool create_graph) const {
  std::vector<physics::FieldRequest> requests;
  std::vector<std::size_t> per_group;
  for (const auto* model : models)
    for (const auto& group : model->groups) {
      auto asked = group->requests(*model->fields);
      per_group.push_back(asked.size());
      for (auto& r : asked) requests.push_back(std::move(r));
    }
  auto environments = physics::evaluate_together(requests, create_graph);
  std::vector<LocalLoss> losses(models.size());
  std::size_t group = 0, next = 0;
  for (std::size_t i = 0; i < models.size(); ++i)
    for (const auto& g : models[i]->groups) {
      const std::vector<expr::Environment> own(
          std::make_move_iterator(environments.begin() + static_cast<std::ptrdiff_t>(next)),
          std::make_move_iterator(environments.begin() +
                                  static_cast<std::ptrdiff_t>(next + per_group[group])));
      next += per_group[group++];
      add_terms(losses[i], *models[i], g->terms(own));
    }
  return losses;
}

void Objective::prepare_chunks(const SubdomainModel& model, int chunks) const {
  torch::NoGradGuard no_grad;
  for (const auto& group : model.groups) group->prepare_chunks(*model.fields, chunks);
}

void Objective::backpropagate_part(LocalLoss& part, bool create_graph) {
  // Without create_graph (figures only) a part may still hang on the parameters' graph, whose
  // derivative nodes the reverse engine has already freed: nothing to backpropagate then.
  if (create_graph && part.total.defined() && part.total.requires_grad()) {
    if (term_gradients_.measuring)
      reduction_.add_term_gradients(term_gradients_,
                                    balancer_.term_gradients(part.probes, parameters()));
    part.total.backward();
  }
  part.detach();
}

void Objective::check_finite(const LocalLoss& loss, const SubdomainModel& model) const {
  if (!loss.total.defined() || std::isfinite(core::read_double(loss.total))) return;
  std::ostringstream terms;
  for (const auto& [name, value] : loss.terms)
    if (!std::isfinite(core::read_double(value))) terms << " " << name;
  std::ostringstream from;
  for (std::size_t k = 0; k < model.remote.size(); ++k)
    if (!core::all_finite(model.remote[k])) from << " " << model.interfaces[k]->interface_id();
  if (!from.str().empty()) {
    // The neighbour that produced them is failing at this very iteration; let its message
    // (naming the real culprit) end the job first.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    TESSERA_FAIL("subdomain " << model.id << " received non-finite values on interface(s)"
                              << from.str() << " at iteration " << iteration_ + 1);
  }
  TESSERA_FAIL("non-finite loss in subdomain "
               << model.id << " at iteration " << iteration_ + 1 << ", term(s):" << terms.str()
               << "; lower the learning rate or check the equations");
}

LocalLoss Objective::subdomain_pass(std::size_t i) {
  auto& model = *owned_[i];
  const Parts parts = parts_of(model);
  const auto interface_terms = [&](LocalLoss& loss, const physics::Chunk& chunk) {
    for (std::size_t k = 0; k < model.interfaces.size(); ++k)
      InterfaceCoupling::add_terms(loss, model, k,
                                   model.interfaces[k]->local_values(*model.fields, true, chunk),
                                   weights_, chunk);
  };
  LocalLoss loss;
  if (parts.whole()) {
    loss = group_terms(model, /*create_graph=*/true, {});
    interface_terms(loss, {});
  } else {
    if (parts.count > 1) prepare_chunks(model, parts.count);
    for (int c = parts.first; c < parts.end; ++c) {
      const physics::Chunk chunk{c, parts.count};
      LocalLoss part = group_terms(model, /*create_graph=*/true, chunk);
      interface_terms(part, chunk);
      backpropagate_part(part, /*create_graph=*/true);
      reduction_.record_part(model, part, /*create_graph=*/true, term_gradients_);
      loss.merge(std::move(part));
    }
    loss = reduction_.finish_parts(model, std::move(loss), term_gradients_);
  }
  check_finite(loss, model);
  backpropagate_rest(loss);
  return loss;
}

LocalLoss Objective::exchange_and_loss(const Pass& pass) {
  if (pass.values) pass.values->assign(owned_.size(), {0.0, 0.0});
  std::vector<Parts> layout;
  std::vector<bool> graph;
  for (auto* model : owned_) {
    layout.push_back(parts_of(*model));
    graph.push_back(pass.create_graph && layout.back().whole());
  }
  // Interface values first and sent at once; interior work overlaps the messages in flight.
  const auto locals = coupling_.start(owned_, graph);
  auto interior = interior_terms(pass, layout);
  if (pass.backward_interior) backward_interior(interior);
  coupling_.finish(owned_);
  return add_interface_terms(pass, layout, locals, std::move(interior));
}

std::vector<LocalLoss> Objective::interior_terms(const Pass& pass,
                                                 const std::vector<Parts>& layout) {
  std::vector<SubdomainModel*> together;
  for (std::size_t i = 0; i < owned_.size(); ++i)
    if (layout[i].whole()) together.push_back(owned_[i]);
  // Whole subdomains together: one network call per kind of point set for all of them.
  auto together_terms = group_terms_together(together, pass.create_graph);
  coupling_.progress();
  std::vector<LocalLoss> interior(owned_.size());
  for (std::size_t i = 0, next = 0; i < owned_.size(); ++i) {
    auto& model = *owned_[i];
    const Parts& p = layout[i];
    if (layout[i].whole()) {
      interior[i] = std::move(together_terms[next++]);
    } else {
      if (p.count > 1) prepare_chunks(model, p.count);
      for (int c = p.first; c < p.end; ++c) {
        LocalLoss part = group_terms(model, pass.create_graph, {c, p.count});
        backpropagate_part(part, pass.create_graph);
        reduction_.record_part(model, part, pass.create_graph, term_gradients_);
        interior[i].merge(std::move(part));
        coupling_.progress();
      }
    }
    // Before waiting: the rank whose own terms diverged reports first and ends the job.
    if (pass.stop_on_nonfinite) check_finite(interior[i], model);
    if (!layout[i].whole())
      interior[i] = reduction_.finish_parts(model, std::move(interior[i]), term_gradients_);
  }
  if (pass.values)
    for (std::size_t i = 0; i < owned_.size(); ++i) (*pass.values)[i].first = value_of(interior[i]);
  return interior;
}

void Objective::backward_interior(std::vector<LocalLoss>& interior) {
  // One backward for all: subdomains evaluated together share their network nodes.
  torch::Tensor sum;
  for (auto& part : interior)
    if (part.total.defined() && part.total.requires_grad()) {
      sum = sum.defined() ? sum + part.total : part.total;
      part.total = torch::Tensor();
    }
  if (sum.defined()) sum.backward();
  coupling_.progress();
}

LocalLoss Objective::interface_parts(const Pass& pass, const SubdomainModel& model,
                                     const Parts& parts, bool sent_with_graph,
                                     const std::vector<torch::Tensor>& locals) {
  LocalLoss interface;
  for (int c = parts.first; c < parts.end; ++c) {
    const physics::Chunk chunk{c, parts.count};
    LocalLoss part;
    for (std::size_t k = 0; k < model.interfaces.size(); ++k) {
      const auto& side = *model.interfaces[k];
      const auto local = sent_with_graph || !pass.create_graph
                             ? chunk.rows(locals[k])
                             : side.local_values(*model.fields, pass.create_graph, chunk);
      InterfaceCoupling::add_terms(part, model, k, local, weights_, chunk);
    }
    if (!parts.whole()) backpropagate_part(part, pass.create_graph);
    interface.merge(std::move(part));
  }
  return interface;
}

LocalLoss Objective::add_interface_terms(const Pass& pass, const std::vector<Parts>& layout,
                                         const std::vector<std::vector<torch::Tensor>>& locals,
                                         std::vector<LocalLoss> interior) {
  // Whole subdomains' sides go together, unless each subdomain's own figures are asked for.
  const bool together = !pass.values && !pass.stop_on_nonfinite;
  std::vector<InterfaceCoupling::SideValues> whole_sides;
  LocalLoss loss;
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto& model = *owned_[i];
    const Parts& p = layout[i];
    if (together && p.whole()) {
      for (std::size_t k = 0; k < model.interfaces.size(); ++k)
        whole_sides.push_back({&model, k, locals[i][k]});
      loss.merge(std::move(interior[i]));
      continue;
    }
    LocalLoss interface =
        interface_parts(pass, model, p, pass.create_graph && p.whole(), locals[i]);
    if (pass.values) (*pass.values)[i].second = value_of(interface);
    interior[i].merge(std::move(interface));
    if (pass.stop_on_nonfinite) check_finite(interior[i], model);
    loss.merge(std::move(interior[i]));
  }
  if (!whole_sides.empty()) {
    LocalLoss interface;
    InterfaceCoupling::add_terms_together(interface, whole_sides, weights_,
                                          term_gradients_.measuring);
    loss.merge(std::move(interface));
  }
  return loss;
}

}  // namespace tessera::train
