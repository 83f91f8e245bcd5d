// Optimizer state in checkpoints. Adam uses LibTorch's own serialization; L-BFGS's is written
// field by field because LibTorch (1.13) fails to pickle its scratch list of undefined tensors.
#include "tessera/train/optimizer_state.hpp"

#include <sstream>
#include <type_traits>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train {
namespace {

using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

torch::Tensor number(double value) { return torch::full({}, value, torch::kFloat64); }

double read_number(InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<double>();
}

void write_list(OutputArchive& archive, const std::string& name,
                const std::deque<torch::Tensor>& list) {
  archive.write(name + ".size", number(static_cast<double>(list.size())));
  for (std::size_t k = 0; k < list.size(); ++k)
    archive.write(name + "." + std::to_string(k), list[k]);
}

std::deque<torch::Tensor> read_list(InputArchive& archive, const std::string& name) {
  std::deque<torch::Tensor> list(static_cast<std::size_t>(read_number(archive, name + ".size")));
  for (std::size_t k = 0; k < list.size(); ++k)
    archive.read(name + "." + std::to_string(k), list[k]);
  return list;
}

void save_lbfgs(const torch::optim::LBFGS& optimizer, OutputArchive& archive) {
  if (optimizer.state().empty()) return;  // no step taken yet
  const auto& state =
      static_cast<const torch::optim::LBFGSParamState&>(*optimizer.state().begin()->second);
  archive.write("func_evals", number(static_cast<double>(state.func_evals())));
  archive.write("n_iter", number(static_cast<double>(state.n_iter())));
  archive.write("t", number(state.t()));
  archive.write("prev_loss", number(state.prev_loss()));
  for (const auto& [name, tensor] : {std::pair<const char*, torch::Tensor>{"d", state.d()},
                                     {"H_diag", state.H_diag()},
                                     {"prev_flat_grad", state.prev_flat_grad()}})
    if (tensor.defined()) archive.write(name, tensor);
  write_list(archive, "old_dirs", state.old_dirs());
  write_list(archive, "old_stps", state.old_stps());
  write_list(archive, "ro", state.ro());
}

void load_lbfgs(torch::optim::LBFGS& optimizer, InputArchive& archive) {
  torch::Tensor probe;
  if (!archive.try_read("n_iter", probe)) return;  // saved before its first step
  auto state = std::make_unique<torch::optim::LBFGSParamState>();
  state->func_evals(static_cast<int64_t>(read_number(archive, "func_evals")));
  state->n_iter(static_cast<int64_t>(read_number(archive, "n_iter")));
  state->t(read_number(archive, "t"));
  state->prev_loss(read_number(archive, "prev_loss"));
  // A fresh tensor per read: try_read() into a defined tensor overwrites that tensor in place.
  if (torch::Tensor d; archive.try_read("d", d)) state->d(d);
  if (torch::Tensor h; archive.try_read("H_diag", h)) state->H_diag(h);
  if (torch::Tensor g; archive.try_read("prev_flat_grad", g)) state->prev_flat_grad(g);
  state->old_dirs(read_list(archive, "old_dirs"));
  state->old_stps(read_list(archive, "old_stps"));
  state->ro(read_list(archive, "ro"));
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  const auto& first = optimizer.param_groups().at(0).params().at(0);
  optimizer.state()[state_key<Key>(first)] = std::move(state);
}

}  // namespace

void save_optimizer(const torch::optim::Optimizer& optimizer, OutputArchive& archive) {
  if (const auto* lbfgs = dynamic_cast<const torch::optim::LBFGS*>(&optimizer))
    save_lbfgs(*lbfgs, archive);
  else
    optimizer.save(archive);
}

void load_optimizer(torch::optim::Optimizer& optimizer, InputArchive& archive) {
  if (auto* lbfgs = dynamic_cast<torch::optim::LBFGS*>(&optimizer))
    load_lbfgs(*lbfgs, archive);
  else
    optimizer.load(archive);
}

}  // namespace tessera::train
