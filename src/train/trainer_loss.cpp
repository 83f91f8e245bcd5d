// Loss assembly and the neighbour exchange of the trainer.
#include <chrono>
#include <thread>

#include "tessera/autodiff/taylor.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/finite.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::train {

Trainer::Parts Trainer::parts_of(const SubdomainModel& model) const {
  int64_t largest = 0;
  for (const auto& group : model.groups) largest = std::max(largest, group->point_count());
  for (const auto& side : model.interfaces) largest = std::max(largest, side->point_count());
  const auto& slices = sync_.slices;
  const int count = slices.on() ? slices.count : 1;
  const int64_t per_slice = (largest + count - 1) / count;
  const int within = plan_.batch_points <= 0
                         ? 1
                         : static_cast<int>(std::max<int64_t>(
                               1, (per_slice + plan_.batch_points - 1) / plan_.batch_points));
  if (!slices.on()) return {within, 0, within};
  // Slice k is parts [k within, (k + 1) within): the same rows whichever rank evaluates it.
  return {count * within, slices.first * within, slices.end * within, true};
}

void Trainer::add_terms(LocalLoss& loss, const SubdomainModel& model,
                        const std::vector<physics::TermValue>& terms) const {
  for (const auto& term : terms) {
    TESSERA_ASSERT(weights_.count(term.name), "unknown loss term '" << term.name << "'");
    loss.add(term, model.id, weights_.at(term.name));
  }
}

LocalLoss Trainer::group_terms(const SubdomainModel& model, bool create_graph,
                               const physics::Chunk& chunk) const {
  LocalLoss loss;
  for (const auto& group : model.groups)
    add_terms(loss, model, group->evaluate(*model.fields, create_graph, chunk));
  return loss;
}

std::vector<LocalLoss> Trainer::group_terms_together(const std::vector<SubdomainModel*>& models,
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

void Trainer::prepare_chunks(const SubdomainModel& model, int chunks) const {
  torch::NoGradGuard no_grad;
  for (const auto& group : model.groups) group->prepare_chunks(*model.fields, chunks);
}

void Trainer::backpropagate_part(LocalLoss& part, bool create_graph) {
  // Without create_graph (figures only) a part may still hang on the parameters' graph, whose
  // derivative nodes the reverse engine has already freed: nothing to backpropagate then.
  if (create_graph && part.total.defined() && part.total.requires_grad()) {
    if (measuring_terms_) {
      auto gradients = balancer_.term_gradients(part.probes, owned_parameters());
      // With slices each part's term gradients are kept apart and summed in slice order.
      if (part_term_gradients_.empty() || sync_.slices.on())
        part_term_gradients_ = std::move(gradients);
      else
        for (std::size_t t = 0; t < gradients.size(); ++t) part_term_gradients_[t] += gradients[t];
    }
    part.total.backward();
  }
  part.detach();
}

LocalLoss Trainer::subdomain_loss(SubdomainModel& model, bool create_graph) {
  const Parts parts = parts_of(model);
  const auto interface_terms = [&](LocalLoss& loss, const physics::Chunk& chunk) {
    for (std::size_t k = 0; k < model.interfaces.size(); ++k)
      InterfaceCoupling::add_terms(
          loss, model, k, model.interfaces[k]->local_values(*model.fields, create_graph, chunk),
          weights_, chunk);
  };
  if (!parts.many()) {
    LocalLoss loss = group_terms(model, create_graph, {});
    interface_terms(loss, {});
    return loss;
  }
  if (parts.count > 1) prepare_chunks(model, parts.count);
  LocalLoss loss;
  for (int c = parts.first; c < parts.end; ++c) {
    const physics::Chunk chunk{c, parts.count};
    LocalLoss part = group_terms(model, create_graph, chunk);
    interface_terms(part, chunk);
    backpropagate_part(part, create_graph);
    if (sync_.slices.on()) record_slice_part(model, part, create_graph);
    loss.merge(std::move(part));
  }
  return sync_.slices.on() ? fold_slices(model) : loss;
}

void Trainer::backpropagate_rest(const LocalLoss& loss) {
  if (loss.total.defined() && loss.total.requires_grad()) loss.total.backward();
}

void Trainer::check_finite(const LocalLoss& loss, const SubdomainModel& model) const {
  if (!loss.total.defined() || std::isfinite(loss.total.item<double>())) return;
  std::ostringstream terms;
  for (const auto& [name, value] : loss.terms)
    if (!std::isfinite(value.item<double>())) terms << " " << name;
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

LocalLoss Trainer::exchange_and_loss(bool create_graph, bool backward_interior,
                                     bool stop_on_nonfinite,
                                     std::vector<std::pair<double, double>>* parts) {
  const auto value = [](const LocalLoss& l) {
    return l.total.defined() ? l.total.item<double>() : 0.0;
  };
  if (parts) parts->assign(owned_.size(), {0.0, 0.0});
  // The parameters are fixed until the loss is assembled: every network call of it shares one
  // stack of a rank's subdomain weights.
  const autodiff::SharedStacks shared_stacks;
  // A subdomain evaluated in parts sends its interface values without a graph and recomputes
  // each part's with one, so that no pass holds more than a part's graph.
  std::vector<Parts> parts_per(owned_.size());
  std::vector<bool> graph(owned_.size());
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    parts_per[i] = parts_of(*owned_[i]);
    graph[i] = create_graph && !parts_per[i].many();
  }
  // Interface values first and sent at once; interior work overlaps the messages in flight.
  auto locals = coupling_.start(owned_, graph);
  LocalLoss loss;
  std::vector<LocalLoss> interior(owned_.size());
  // Whole subdomains together: one network call per kind of point set for all of them.
  std::vector<SubdomainModel*> whole;
  for (std::size_t i = 0; i < owned_.size(); ++i)
    if (!parts_per[i].many()) whole.push_back(owned_[i]);
  auto whole_terms = group_terms_together(whole, create_graph);
  coupling_.progress();
  for (std::size_t i = 0, next = 0; i < owned_.size(); ++i) {
    auto& model = *owned_[i];
    const Parts& p = parts_per[i];
    if (!p.many()) interior[i] = std::move(whole_terms[next++]);
    if (p.count > 1) prepare_chunks(model, p.count);
    for (int c = p.first; c < p.end && p.many(); ++c) {
      LocalLoss part = group_terms(model, create_graph, {c, p.count});
      backpropagate_part(part, create_graph);
      if (sync_.slices.on()) record_slice_part(model, part, create_graph);
      interior[i].merge(std::move(part));
      coupling_.progress();
    }
    // Before waiting: the rank whose own terms diverged reports first and ends the job.
    if (stop_on_nonfinite) check_finite(interior[i], model);
    if (sync_.slices.on()) interior[i] = fold_slices(model);
  }
  if (parts)
    for (std::size_t i = 0; i < owned_.size(); ++i) (*parts)[i].first = value(interior[i]);
  if (backward_interior) {
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
  coupling_.finish(owned_);
  // Whole subdomains' sides go together, unless each subdomain's own figures are asked for.
  const bool together = !parts && !stop_on_nonfinite;
  std::vector<InterfaceCoupling::SideValues> whole_sides;
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto& model = *owned_[i];
    LocalLoss interface;
    const Parts& p = parts_per[i];
    if (together && !p.many()) {
      for (std::size_t k = 0; k < model.interfaces.size(); ++k)
        whole_sides.push_back({&model, k, locals[i][k]});
      loss.merge(std::move(interior[i]));
      continue;
    }
    for (int c = p.first; c < p.end; ++c) {
      const physics::Chunk chunk{c, p.count};
      LocalLoss part;
      for (std::size_t k = 0; k < model.interfaces.size(); ++k) {
        const auto& side = *model.interfaces[k];
        const auto local = graph[i] || !create_graph
                               ? chunk.rows(locals[i][k])
                               : side.local_values(*model.fields, create_graph, chunk);
        InterfaceCoupling::add_terms(part, model, k, local, weights_, chunk);
      }
      if (p.many()) backpropagate_part(part, create_graph);
      interface.merge(std::move(part));
    }
    if (parts) (*parts)[i].second = value(interface);
    interior[i].merge(std::move(interface));
    if (stop_on_nonfinite) check_finite(interior[i], model);
    loss.merge(std::move(interior[i]));
  }
  if (!whole_sides.empty()) {
    LocalLoss interface;
    InterfaceCoupling::add_terms_together(interface, whole_sides, weights_, measuring_terms_);
    loss.merge(std::move(interface));
  }
  return loss;
}

LogRecord Trainer::log(const LocalLoss& loss, const std::string& stage, double lr, bool final) {
  LogRecord record;
  {
    core::ScopedTimer timer(sync_s_);
    // Slots: per term, per subdomain, (sum, count); then per subdomain (jump sum, count).
    const std::size_t terms = term_names_.size(), slots = static_cast<std::size_t>(subdomains_);
    std::vector<double> figures(2 * slots * (terms + 1), 0.0);
    for (std::size_t t = 0; t < terms; ++t) {
      const auto& name = term_names_[t];
      if (auto it = loss.sums.find(name); it != loss.sums.end())
        for (const auto& [s, value] : it->second)
          figures[2 * (t * slots + s)] = value.item<double>();
      if (auto it = loss.counts.find(name); it != loss.counts.end())
        for (const auto& [s, count] : it->second) figures[2 * (t * slots + s) + 1] = count;
    }
    for (const auto& [s, value] : loss.jump_sums)
      figures[2 * (terms * slots + s)] = value.item<double>();
    for (const auto& [s, count] : loss.jump_counts) figures[2 * (terms * slots + s) + 1] = count;
    // Without replicas each slot has one contributing rank, so adding the zeros of the others is
    // exact. With replicas a slot sums its group's slices, in the order MPI reduces them. With
    // slices every rank of the group holds the group's sum already: only the first gives it.
    if (sync_.slices.on() && sync_.slices.group.rank() > 0)
      std::fill(figures.begin(), figures.end(), 0.0);
    comm_.sum_in_place(figures);
    record.loss = 0;
    for (std::size_t t = 0; t <= terms; ++t) {
      double sum = 0, count = 0;
      for (std::size_t s = 0; s < slots; ++s) {  // always in subdomain order
        sum += figures[2 * (t * slots + s)];
        count += figures[2 * (t * slots + s) + 1];
      }
      const double mean = count > 0 ? sum / count : 0.0;
      if (t == terms) {
        if (count > 0) record.interface_jump = std::sqrt(mean);
      } else {
        record.terms[term_names_[t]] = mean;
        record.loss += weights_.at(term_names_[t]) * mean;
      }
    }
  }
  record.iteration = iteration_;
  record.total_iterations = total_iterations_;
  record.stage = stage;
  record.lr = lr;
  record.weights = weights_;
  record.final = final;
  if (callbacks_.errors) record.rel_l2 = callbacks_.errors();
  if (sync_.parameters) record.parameters = sync_.parameters->current();
  record.wall_s = wall_seconds();
  // The compute timer encloses the exchange and the wait (not the sync, which it leaves out);
  // report the phases as disjoint shares.
  const double exchange_s = coupling_.exchange_seconds();
  const double wait_s = coupling_.wait_seconds();
  record.time_s = {{"compute", compute_s_ - exchange_s - wait_s},
                   {"exchange", exchange_s},
                   {"wait", wait_s},
                   {"sync", sync_s_}};
  // check_finite() stops a diverging subdomain at once; this catches what only shows after
  // the reduction (a global sum that overflows).
  if (!std::isfinite(record.loss)) {
    std::ostringstream detail;
    for (const auto& [name, value] : record.terms)
      if (!std::isfinite(value)) detail << " " << name;
    TESSERA_FAIL("non-finite global loss at iteration "
                 << iteration_ << " in term(s)" << detail.str()
                 << "; lower the learning rate or check the equations");
  }
  if (callbacks_.on_log) callbacks_.on_log(record);
  last_ = record;
  return record;
}

}  // namespace tessera::train
