#include "tessera/train/interface_coupling.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"

namespace tessera::train {

std::vector<std::vector<torch::Tensor>> InterfaceCoupling::start(
    const std::vector<SubdomainModel*>& owned, const std::vector<bool>& create_graph) {
  std::vector<std::vector<torch::Tensor>> locals(owned.size());
  if (!exchange_) return locals;
  exchange_->start_receives();
  // Every side's fields in as few network calls as the networks allow, with and without graph.
  for (const bool graph : {true, false}) {
    std::vector<physics::FieldRequest> requests;
    for (std::size_t i = 0; i < owned.size(); ++i)
      if (create_graph[i] == graph)
        for (const auto& side : owned[i]->interfaces)
          requests.push_back(side->request(*owned[i]->fields));
    if (requests.empty()) continue;
    const auto environments = physics::evaluate_together(requests, graph);
    std::size_t next = 0;
    for (std::size_t i = 0; i < owned.size(); ++i)
      if (create_graph[i] == graph)
        for (const auto& side : owned[i]->interfaces) {
          auto values = side->values_from(environments[next++]);
          // Without a graph asked for, the values may still hang on the parameters (the
          // reverse engine's outputs do); detached, they do not keep that graph alive.
          locals[i].push_back(graph ? values : values.detach());
        }
  }
  // A neighbour on this rank takes the values where they are; for the others, one copy to the
  // host for every message, each side's rows contiguous in it.
  handed_over_.clear();
  std::vector<torch::Tensor> flat;
  std::vector<const physics::InterfaceSide*> sent;
  for (std::size_t i = 0; i < owned.size(); ++i)
    for (std::size_t k = 0; k < owned[i]->interfaces.size(); ++k) {
      const auto& side = *owned[i]->interfaces[k];
      const auto values = locals[i][k].detach();
      if (exchange_->local(side.interface_id(), side.side())) {
        handed_over_[{side.interface_id(), side.side()}] = values;
      } else {
        flat.push_back(values.reshape({-1}));
        sent.push_back(&side);
      }
    }
  if (flat.empty()) return locals;
  const auto messages =
      core::read_to_host(torch::cat(flat), torch::kFloat64, core::HostRead::message);
  const double* next = messages.data_ptr<double>();
  for (std::size_t j = 0; j < sent.size(); ++j) {
    const int64_t count = flat[j].numel();
    exchange_->send(sent[j]->interface_id(), sent[j]->side(), next, count);
    next += count;
  }
  return locals;
}

void InterfaceCoupling::progress() {
  if (exchange_) exchange_->progress();
}

namespace {

// A side's received float64 values as a tensor of the network's type and device: converted
// element by element on the CPU (one allocation instead of a copy and a conversion).
torch::Tensor received_values(const std::vector<double>& data, at::IntArrayRef sizes,
                              const torch::TensorOptions& like) {
  TESSERA_ASSERT(
      static_cast<int64_t>(data.size()) == c10::multiply_integers(sizes),
      "interface exchange: received " << data.size() << " values for a side of " << sizes);
  if (like.device().is_cpu() && like.dtype() == torch::kFloat32) {
    auto values = torch::empty(sizes, like);
    std::copy(data.begin(), data.end(), values.data_ptr<float>());
    return values;
  }
  return torch::from_blob(const_cast<double*>(data.data()), sizes, torch::kFloat64)
      .to(like.device(), like.dtype().toScalarType(), /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace

void InterfaceCoupling::finish(const std::vector<SubdomainModel*>& owned) {
  if (!exchange_) return;
  exchange_->wait();
  for (auto* model : owned) {
    model->remote.clear();
    const auto like = model->network->parameters().front().options();
    for (const auto& side : model->interfaces) {
      const int id = side->interface_id();
      if (exchange_->local(id, side->side())) {
        // The same values a message would carry: float64 holds them exactly.
        model->remote.push_back(handed_over_.at({id, 1 - side->side()}).to(like));
        continue;
      }
      const auto& data = exchange_->received(id, side->side());
      model->remote.push_back(
          received_values(data, {side->point_count(), side->quantities()}, like));
    }
  }
  handed_over_.clear();
}

void InterfaceCoupling::add_terms(LocalLoss& loss, const SubdomainModel& model, std::size_t k,
                                  const torch::Tensor& local,
                                  const std::map<std::string, double>& weights,
                                  const physics::Chunk& chunk) {
  const auto& side = *model.interfaces[k];
  // A neighbour that diverged may send non-finite values until it is rolled back: those rows
  // take this side's own values instead, so every jump there (each term is one), its term and
  // its gradient are zero. Decided on the device, nothing read.
  const auto received = chunk.rows(model.remote.at(k));
  const auto usable = torch::isfinite(received).all(1, /*keepdim=*/true);
  const torch::Tensor remote = torch::where(usable, received, local.detach());
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
