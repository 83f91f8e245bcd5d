// A subdomain's state in a checkpoint archive (subdomain_archive.hpp).
#include "tessera/train/subdomain_archive.hpp"

#include <array>
#include <cstring>

#include "archive_numbers.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/train/optimizer_state.hpp"

namespace tessera::train {
namespace {

using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

/// The generator state as 6 int64 words (the bits of the 4 state words, the spare flag, the
/// bits of the spare normal).
torch::Tensor encode(const core::Rng::State& state) {
  std::array<int64_t, 6> words{};
  std::memcpy(words.data(), state.s.data(), sizeof state.s);
  words[4] = state.has_spare ? 1 : 0;
  std::memcpy(&words[5], &state.spare, sizeof state.spare);
  return torch::tensor(std::vector<int64_t>(words.begin(), words.end()), torch::kInt64);
}

core::Rng::State decode(const torch::Tensor& tensor) {
  TESSERA_CHECK(tensor.numel() == 6 && tensor.scalar_type() == torch::kInt64,
                "checkpoint: a random-stream state has the wrong shape");
  const auto words = tensor.contiguous();
  const int64_t* w = words.data_ptr<int64_t>();
  core::Rng::State state;
  std::memcpy(state.s.data(), w, sizeof state.s);
  state.has_spare = w[4] != 0;
  std::memcpy(&state.spare, &w[5], sizeof state.spare);
  return state;
}

using detail::archived_number;
using detail::read_archived_number;

std::string group_key(std::size_t g, const char* what) {
  return "group" + std::to_string(g) + "." + what;
}

void save_groups(const SubdomainModel& model, OutputArchive& archive) {
  for (std::size_t g = 0; g < model.groups.size(); ++g) {
    const auto& group = *model.groups[g];
    if (auto origin = group.sample_origin()) {
      archive.write(group_key(g, "origin"), encode(*origin));
      archive.write(group_key(g, "points"),
                    archived_number(static_cast<double>(group.point_count())));
    }
    // Points redistributed by their residual: the stream state alone cannot redraw them.
    // Nor can it say where the stream stands after the draw: that is kept too.
    if (auto* equations = dynamic_cast<physics::EquationGroup*>(model.groups[g].get()))
      if (equations->adapted_points().defined()) {
        archive.write(group_key(g, "adapted"), equations->adapted_points());
        archive.write(group_key(g, "stream"), encode(equations->rng().state()));
      }
  }
}

void load_groups(InputArchive& archive, SubdomainModel& model) {
  for (std::size_t g = 0; g < model.groups.size(); ++g) {
    auto& group = *model.groups[g];
    torch::Tensor origin;
    if (!archive.try_read(group_key(g, "origin"), origin)) continue;
    auto* equations = dynamic_cast<physics::EquationGroup*>(&group);
    if (equations)
      equations->set_point_count(
          static_cast<int64_t>(read_archived_number(archive, group_key(g, "points"))));
    group.resample_from(decode(origin));
    torch::Tensor adapted, stream;
    if (equations && archive.try_read(group_key(g, "adapted"), adapted)) {
      equations->set_adapted_points(adapted);
      archive.read(group_key(g, "stream"), stream);
      equations->rng().set_state(decode(stream));
    }
  }
}

}  // namespace

std::shared_ptr<OutputArchive> save_subdomain(const SubdomainModel& model,
                                              const torch::optim::Optimizer* optimizer,
                                              const DivergenceGuard& guard, std::size_t slot) {
  auto archive = std::make_shared<OutputArchive>();
  OutputArchive network;
  model.network->save(network);
  archive->write("network", network);
  if (optimizer) {
    OutputArchive state;
    save_optimizer(*optimizer, state);
    archive->write("optimizer", state);
  }
  for (std::size_t k = 0; k < model.interfaces.size(); ++k)
    if (auto origin = model.interfaces[k]->sample_origin())
      archive->write("interface" + std::to_string(k) + ".origin", encode(*origin));
  save_groups(model, *archive);
  if (slot < guard.size()) {
    archive->write("guard.lr_factor", archived_number(guard.lr_factor(slot)));
    archive->write("guard.failures", archived_number(guard.failures(slot)));
  }
  return archive;
}

void load_subdomain(InputArchive& archive, SubdomainModel& model, DivergenceGuard& guard,
                    std::size_t slot) {
  torch::NoGradGuard no_grad;
  load_network(archive, model);
  torch::Tensor factor;
  if (archive.try_read("guard.lr_factor", factor))
    guard.restore(slot, core::read_double(factor),
                  static_cast<int>(read_archived_number(archive, "guard.failures")));
  for (std::size_t k = 0; k < model.interfaces.size(); ++k) {
    torch::Tensor origin;
    if (archive.try_read("interface" + std::to_string(k) + ".origin", origin))
      model.interfaces[k]->resample_from(decode(origin));
  }
  load_groups(archive, model);
}

namespace {

/// The dtype a module archive saved its parameter `dotted` ("layer.weight") in.
torch::Dtype saved_dtype(InputArchive& module, const std::string& dotted) {
  const auto dot = dotted.find('.');
  if (dot == std::string::npos) {
    torch::Tensor saved;
    module.read(dotted, saved);
    return saved.scalar_type();
  }
  InputArchive child;
  module.read(dotted.substr(0, dot), child);
  return saved_dtype(child, dotted.substr(dot + 1));
}

}  // namespace

void load_network(InputArchive& archive, SubdomainModel& model) {
  torch::NoGradGuard no_grad;
  InputArchive network;
  archive.read("network", network);
  // A stage may have trained in another dtype than the network has now; its bytes read into
  // this dtype would be garbage, so the network takes the saved dtype first.
  const auto parameters = model.network->named_parameters();
  if (!parameters.is_empty()) {
    const auto dtype = saved_dtype(network, parameters.begin()->key());
    if (dtype != parameters.begin()->value().scalar_type()) model.network->to(dtype);
  }
  model.network->load(network);
}

void load_shared_parameters(InputArchive& archive, const std::vector<torch::Tensor>& raw) {
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < raw.size(); ++k) {
    torch::Tensor value;
    archive.read("raw" + std::to_string(k), value);
    raw[k].copy_(value);
  }
}

void load_subdomain_optimizer(InputArchive& archive, torch::optim::Optimizer& optimizer) {
  InputArchive state;
  if (archive.try_read("optimizer", state)) load_optimizer(optimizer, state);
}

}  // namespace tessera::train
