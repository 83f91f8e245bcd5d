#include "tessera/train/interface_coupling.hpp"

namespace tessera::train {

std::vector<std::vector<torch::Tensor>> InterfaceCoupling::start(
    const std::vector<SubdomainModel*>& owned, const std::vector<bool>& create_graph) {
  std::vector<std::vector<torch::Tensor>> locals(owned.size());
  if (!exchange_) return locals;
  exchange_->start_receives();
  for (std::size_t i = 0; i < owned.size(); ++i) {
    auto& model = *owned[i];
    for (const auto& side : model.interfaces) {
      auto values = side->local_values(*model.fields, create_graph[i]);
      const auto message = values.detach().to(torch::kCPU, torch::kFloat64).contiguous();
      exchange_->send(side->interface_id(), side->side(), message.data_ptr<double>(),
                      message.numel());
      // Without a graph asked for, the values may still hang on the parameters (the reverse
      // engine's outputs do); detached, they do not keep that graph alive.
      locals[i].push_back(create_graph[i] ? values : values.detach());
    }
  }
  return locals;
}

void InterfaceCoupling::progress() {
  if (exchange_) exchange_->progress();
}

void InterfaceCoupling::finish(const std::vector<SubdomainModel*>& owned) {
  if (!exchange_) return;
  exchange_->wait();
  for (auto* model : owned) {
    model->remote.clear();
    for (const auto& side : model->interfaces) {
      const auto& data = exchange_->received(side->interface_id(), side->side());
      auto remote = torch::from_blob(const_cast<double*>(data.data()),
                                     {side->point_count(), side->quantities()}, torch::kFloat64)
                        .clone();
      const auto like = model->network->parameters().front();
      model->remote.push_back(remote.to(like.device(), like.scalar_type()));
    }
  }
}

void InterfaceCoupling::add_terms(LocalLoss& loss, const SubdomainModel& model, std::size_t k,
                                  const torch::Tensor& local,
                                  const std::map<std::string, double>& weights,
                                  const physics::Chunk& chunk) {
  const auto& side = *model.interfaces[k];
  if (!torch::isfinite(model.remote.at(k)).all().item<bool>()) return;
  const torch::Tensor remote = chunk.rows(model.remote.at(k));
  for (const auto& term : side.losses(local, remote, chunk))
    loss.add(term, model.id, weights.at(term.name));
  if (side.side() == 0) {
    auto jump = side.squared_jump(local.detach(), remote);
    auto& sum = loss.jump_sums[model.id];
    sum = sum.defined() ? sum + jump : jump;
    loss.jump_counts[model.id] += static_cast<double>(local.size(0) * model.network->outputs());
  }
}

}  // namespace tessera::train
