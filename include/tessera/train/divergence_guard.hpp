#pragma once
/// The divergence guard of Adam stages: a network whose loss or gradient turns non-finite goes
/// back to its last good state with its learning rate halved, instead of ending hours of
/// training; the third time it happens the job stops and says where.
///
/// Nothing is read from the device between log iterations: each iteration's finiteness stays a
/// tensor that masks the steps (a network with a non-finite gradient does not step) and is
/// folded into the first failing iteration per network (watch); the runner reads that once,
/// before the log iteration or the stage's end, and rolls the failed networks back (settle).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/torch_pch.hpp"

namespace tessera::train {

class DivergenceGuard {
 public:
  /// Roll-backs a network may take; the next divergence ends the job.
  static constexpr int max_failures = 3;

  /// One slot per owned network.
  void resize(std::size_t networks) { slots_.resize(networks); }
  std::size_t size() const { return slots_.size(); }

  /// Remembers network `i`'s parameters and optimizer state as its last good ones.
  void remember(std::size_t i, const std::vector<torch::Tensor>& parameters,
                const torch::optim::Optimizer& optimizer, int64_t iteration);

  /// Notes iteration `iteration`'s finiteness, `ok` ([networks] bool, on the networks' device):
  /// the first iteration at which each network failed is kept there. No read.
  void watch(const torch::Tensor& ok, int64_t iteration);
  /// Per network, the first iteration it failed at since the last call (-1: none), and forgets
  /// them. One read, none when nothing was watched.
  std::vector<int64_t> take_failures();

  /// Puts network `i` (subdomain `subdomain`) back to its last good state with its learning
  /// rate factor halved, and returns the warning to show. On the max_failures-th divergence it
  /// throws tessera::Error naming the subdomain, `iteration` and `terms` instead.
  std::string roll_back(std::size_t i, int subdomain, int64_t iteration, const std::string& terms,
                        const std::vector<torch::Tensor>& parameters,
                        torch::optim::Optimizer& optimizer);

  /// The factor on network `i`'s scheduled learning rate (halved at each roll-back).
  double lr_factor(std::size_t i) const { return slots_.at(i).lr_factor; }
  int failures(std::size_t i) const { return slots_.at(i).failures; }
  /// Restores the counters of network `i` from a checkpoint.
  void restore(std::size_t i, double lr_factor, int failures);

 private:
  struct Slot {
    std::vector<torch::Tensor> parameters;
    std::string optimizer;  ///< serialized optimizer state
    int64_t iteration = 0;
    double lr_factor = 1.0;
    int failures = 0;
  };
  std::vector<Slot> slots_;
  torch::Tensor first_failure_;  ///< [networks] int64 on the device, -1 where none
};

/// Whether every element of every defined tensor of `tensors` is finite, as a bool tensor of no
/// dimensions on their device (true for none). No read: on the CPU a loop over the elements
/// (the tensor route costs three operations and a temporary per tensor), elsewhere tensor
/// operations that stay on the device.
torch::Tensor finite_flag(const std::vector<torch::Tensor>& tensors);
/// finite_flag of the defined gradients of `parameters`.
torch::Tensor finite_gradients(const std::vector<torch::Tensor>& parameters);

}  // namespace tessera::train
