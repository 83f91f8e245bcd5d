#pragma once
/// The trained model as one TorchScript module (`tessera export`): forward(points) takes
/// float64 points [n, inputs] and returns float64 fields [n, fields], computed as the output
/// file and `tessera evaluate` compute them (each point by the subdomain that owns it, FBPINN
/// windows and levels, exactly enforced conditions, input scaling), loadable with
/// torch.jit.load in Python and torch::jit::load in C++, without Tessera.
#include <string>
#include <vector>

#include "tessera/app/setup.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::app {

/// The TorchScript source of the model and the tensors it reads (registered as buffers
/// b0, b1, ... in this order), for `models` (every subdomain, in id order).
struct ScriptedModel {
  std::string source;
  std::vector<torch::Tensor> buffers;
};
ScriptedModel script_model(const Setup& setup, const std::vector<train::SubdomainModel*>& models);

/// Writes the module to `path` with attributes `inputs` and `fields` (their names, in order)
/// and `case_name`. Throws io::WriteError when the file cannot be written.
void save_scripted_model(const ScriptedModel& model, const Setup& setup, const std::string& path);

}  // namespace tessera::app
