#pragma once
/// This rank's loss figures for one evaluation: the differentiable total, and per term and per
/// subdomain the detached sums and point counts that the log reduces. One slot per subdomain,
/// so reductions never depend on which rank owns which subdomain.
#include <map>
#include <string>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::train {

struct LocalLoss {
  torch::Tensor total;  ///< weighted sum over the included subdomains, differentiable
  std::map<std::string, std::map<int, torch::Tensor>> sums;  ///< term -> subdomain -> mean*count
  std::map<std::string, std::map<int, double>> counts;
  std::map<std::string, torch::Tensor> terms;  ///< term -> differentiable sum of means
  std::map<std::string, std::vector<physics::Probe>> probes;  ///< term -> its parts' probes
  std::map<int, torch::Tensor> jump_sums;  ///< subdomain -> sum of squared field jumps
  std::map<int, double> jump_counts;

  /// Adds one term of `subdomain` with `weight`; a replica adds its share of the global mean.
  void add(const physics::TermValue& term, int subdomain, double weight);
  /// Adds every figure of `other`.
  void merge(LocalLoss&& other);
  /// Drops subdomain `s`'s figures (it is being rolled back this iteration).
  void forget_subdomain(int s);
  /// Keeps the values only: the graph goes (a part of a pass already backpropagated).
  void detach();
};

}  // namespace tessera::train
