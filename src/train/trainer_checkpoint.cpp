// Checkpoints of the trainer: what it captures and how it continues from one. A continued run
// is bit-identical to one that was never stopped: the networks, the optimizers' moments, the
// random streams (points are redrawn from the state they were drawn from) and the position in
// the stage schedule all come back.
#include <algorithm>
#include <cstring>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/train/optimizer_state.hpp"
#include "tessera/train/trainer.hpp"

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

torch::Tensor scalar(double value) { return torch::full({}, value, torch::kFloat64); }

double read_scalar(InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<double>();
}

}  // namespace

CheckpointState Trainer::capture(int64_t stage_step) const {
  CheckpointState state;
  state.position = {iteration_, static_cast<int64_t>(stage_index_), stage_step, adam_steps_,
                    weights_};
  const bool writer = !sync_.replicas || sync_.replicas->communicator().rank() == 0;
  for (std::size_t i = 0; i < owned_.size() && writer; ++i) {
    const auto& model = *owned_[i];
    auto archive = std::make_shared<OutputArchive>();
    OutputArchive network;
    model.network->save(network);
    archive->write("network", network);
    if (i < optimizers_.size()) {
      OutputArchive optimizer;
      save_optimizer(*optimizers_[i], optimizer);
      archive->write("optimizer", optimizer);
    }
    for (std::size_t k = 0; k < model.interfaces.size(); ++k)
      if (auto origin = model.interfaces[k]->sample_origin())
        archive->write("interface" + std::to_string(k) + ".origin", encode(*origin));
    for (std::size_t g = 0; g < model.groups.size(); ++g) {
      const auto& group = *model.groups[g];
      if (auto origin = group.sample_origin()) {
        archive->write("group" + std::to_string(g) + ".origin", encode(*origin));
        archive->write("group" + std::to_string(g) + ".points",
                       scalar(static_cast<double>(group.point_count())));
      }
      // Points redistributed by their residual: the stream state alone cannot redraw them.
      // Nor can it say where the stream stands after the draw: that is kept too.
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(model.groups[g].get()))
        if (equations->adapted_points().defined()) {
          archive->write("group" + std::to_string(g) + ".adapted", equations->adapted_points());
          archive->write("group" + std::to_string(g) + ".stream", encode(equations->rng().state()));
        }
    }
    if (i < guard_.size()) {
      archive->write("guard.lr_factor", scalar(guard_.lr_factor(i)));
      archive->write("guard.failures", scalar(guard_.failures(i)));
    }
    state.subdomains[model.id] = archive;
  }
  if (sync_.parameters && !sync_.parameters->empty() && comm_.rank() == 0) {
    state.shared = std::make_shared<OutputArchive>();
    const auto& raw = sync_.parameters->raw();
    for (std::size_t k = 0; k < raw.size(); ++k)
      state.shared->write("raw" + std::to_string(k), raw[k].detach());
    if (parameter_optimizer_) {
      OutputArchive optimizer;
      save_optimizer(*optimizers_.back(), optimizer);
      state.shared->write("optimizer", optimizer);
    }
  }
  return state;
}

void Trainer::resume(RestoredCheckpoint checkpoint) {
  auto& position = checkpoint.position;
  TESSERA_CHECK(position.stage >= 0 && position.stage <= static_cast<int64_t>(plan_.stages.size()),
                "checkpoint: stage " << position.stage << " does not exist in this case's "
                                     << plan_.stages.size() << " stage(s)");
  extend_finished_run(position);
  iteration_ = position.iteration;
  adam_steps_ = position.adam_steps;
  for (const auto& [name, w] : position.weights)
    if (weights_.count(name)) weights_[name] = w;
  last_checkpoint_ = iteration_;
  // The saved tensors are in the dtype of the stage they were saved in.
  if (!plan_.stages.empty())
    set_precision(
        plan_.stages[std::min(static_cast<std::size_t>(position.stage), plan_.stages.size() - 1)]);
  torch::NoGradGuard no_grad;
  guard_.resize(owned_.size());
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto* model = owned_[i];
    auto it = checkpoint.subdomains.find(model->id);
    TESSERA_CHECK(it != checkpoint.subdomains.end(),
                  "checkpoint: no state for subdomain " << model->id);
    auto& archive = *it->second;
    InputArchive network;
    archive.read("network", network);
    model->network->load(network);
    torch::Tensor factor;
    if (archive.try_read("guard.lr_factor", factor)) {
      guard_.restore(i, factor.item<double>(),
                     static_cast<int>(read_scalar(archive, "guard.failures")));
    }
    for (std::size_t k = 0; k < model->interfaces.size(); ++k) {
      torch::Tensor origin;
      if (archive.try_read("interface" + std::to_string(k) + ".origin", origin))
        model->interfaces[k]->resample_from(decode(origin));
    }
    for (std::size_t g = 0; g < model->groups.size(); ++g) {
      auto& group = *model->groups[g];
      torch::Tensor origin;
      if (!archive.try_read("group" + std::to_string(g) + ".origin", origin)) continue;
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(&group))
        equations->set_point_count(
            static_cast<int64_t>(read_scalar(archive, "group" + std::to_string(g) + ".points")));
      group.resample_from(decode(origin));
      torch::Tensor adapted, stream;
      if (archive.try_read("group" + std::to_string(g) + ".adapted", adapted))
        if (auto* equations = dynamic_cast<physics::EquationGroup*>(&group)) {
          equations->set_adapted_points(adapted);
          archive.read("group" + std::to_string(g) + ".stream", stream);
          equations->rng().set_state(decode(stream));
        }
    }
  }
  if (checkpoint.shared && sync_.parameters) {
    const auto& raw = sync_.parameters->raw();
    for (std::size_t k = 0; k < raw.size(); ++k) {
      torch::Tensor value;
      checkpoint.shared->read("raw" + std::to_string(k), value);
      raw[k].copy_(value);
    }
  }
  resume_ = std::move(checkpoint);
}

void Trainer::extend_finished_run(CheckpointPosition& position) const {
  const auto stages = static_cast<int64_t>(plan_.stages.size());
  if (position.stage != stages || stages == 0) return;
  int64_t before_last = 0;
  for (int64_t s = 0; s + 1 < stages; ++s) before_last += plan_.stages[s].iterations;
  const int64_t done_in_last = position.iteration - before_last;
  if (done_in_last < 0 || done_in_last >= plan_.stages.back().iterations) return;
  position.stage = stages - 1;
  position.stage_step = done_in_last;
}

void Trainer::restore_optimizers() {
  if (!resume_ || static_cast<std::size_t>(resume_->position.stage) != stage_index_) return;
  for (std::size_t i = 0; i < owned_.size() && i < optimizers_.size(); ++i) {
    InputArchive optimizer;
    if (resume_->subdomains.at(owned_[i]->id)->try_read("optimizer", optimizer))
      load_optimizer(*optimizers_[i], optimizer);
  }
  if (parameter_optimizer_ && resume_->shared) {
    InputArchive optimizer;
    if (resume_->shared->try_read("optimizer", optimizer))
      load_optimizer(*optimizers_.back(), optimizer);
  }
}

}  // namespace tessera::train
